/**
 * The last line of trace redaction (infra `Tracing`): every OTLP export is scrubbed before it
 * leaves the process. Span names, attribute values (nested ones too), event names and attributes
 * (log lines written inside a span travel as its events) and status messages lose whatever looks
 * like an API key, a webhook secret, a JWT, a bearer credential, a `password=`/`token=` pair, a
 * query string's value or a phone number (also URL-encoded). The spans are built not to carry
 * them in the first place; this catches what slips through (an error message, a log line).
 */
const SCRUBS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bwa_(?:test|live)_[A-Za-z0-9]{8,}/g, "wa_[REDACTED]"],
  [/\bwhsec_[A-Za-z0-9+/=_-]{8,}/g, "whsec_[REDACTED]"],
  [/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, "[REDACTED JWT]"],
  [/\b(Bearer|Basic)\s+[^\s"',;]+/gi, "$1 [REDACTED]"],
  [/\b(password|secret|token|api_key|apikey)(["']?\s*[:=]\s*["']?)[^\s"'&,;}]+/gi, "$1$2[REDACTED]"],
  // query strings (log lines become span events, and an access log line has the URL)
  [/([?&][^=&#\s"]+=)[^&#\s"]*/g, "$1[REDACTED]"],
  [/(?:\+|%2B)\d[\d ()-]{5,}\d/gi, "[REDACTED phone]"]
]

/** Replaces what looks like a credential or a phone number. */
export const scrubText = (text: string): string => {
  let out = text
  for (const [pattern, replacement] of SCRUBS) out = out.replace(pattern, replacement)
  return out
}

interface OtlpValue {
  stringValue?: string
  arrayValue?: { values: Array<OtlpValue> }
  kvlistValue?: { values: Array<{ key: string; value: OtlpValue }> }
}
interface OtlpKeyValue {
  key: string
  value: OtlpValue
}
interface OtlpSpan {
  name: string
  attributes: Array<OtlpKeyValue>
  events: Array<{ name: string; attributes: Array<OtlpKeyValue> }>
  status: { message?: string }
}
export interface TraceData {
  resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<OtlpSpan> }> }>
}

const scrubValue = (value: OtlpValue) => {
  if (value.stringValue !== undefined) value.stringValue = scrubText(value.stringValue)
  value.arrayValue?.values.forEach(scrubValue)
  value.kvlistValue?.values.forEach((kv) => scrubValue(kv.value))
}

/** Scrubs an OTLP trace export in place (span names, attributes, events, status). */
export const scrub = (data: TraceData): TraceData => {
  for (const resource of data.resourceSpans) {
    for (const scope of resource.scopeSpans) {
      for (const span of scope.spans) {
        span.name = scrubText(span.name)
        for (const attribute of span.attributes) scrubValue(attribute.value)
        for (const event of span.events) {
          event.name = scrubText(event.name)
          for (const attribute of event.attributes) scrubValue(attribute.value)
        }
        if (span.status.message !== undefined) span.status.message = scrubText(span.status.message)
      }
    }
  }
  return data
}
