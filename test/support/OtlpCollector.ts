/**
 * A tiny OTLP/HTTP trace collector on 127.0.0.1 for tests: accepts `POST /v1/traces` in JSON
 * (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) and flattens every span with its service name.
 * Protobuf bodies are kept as received (counted, not decoded). Anything else on another path is
 * recorded too (a webhook receiver for the same test).
 */
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

type AttributeValue = string | number | boolean | ReadonlyArray<AttributeValue> | null

export interface CollectedSpan {
  readonly service: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number
  readonly attributes: Readonly<Record<string, AttributeValue>>
  /** the span as exported, for searches over everything it carries */
  readonly raw: unknown
}

export interface Collector {
  readonly url: string
  readonly spans: Array<CollectedSpan>
  readonly protobufBodies: Array<{ readonly contentType: string; readonly bytes: number }>
  readonly other: Array<{ readonly path: string; readonly headers: IncomingHttpHeaders; readonly body: string }>
  readonly close: () => Promise<void>
}

interface OtlpValue {
  readonly stringValue?: string
  readonly intValue?: string | number
  readonly doubleValue?: number
  readonly boolValue?: boolean
  readonly arrayValue?: { readonly values?: ReadonlyArray<OtlpValue> }
}

const valueOf = (v: OtlpValue): AttributeValue =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ??
    (v.arrayValue ? (v.arrayValue.values ?? []).map(valueOf) : null)

const flatten = (body: any): Array<CollectedSpan> => {
  const out: Array<CollectedSpan> = []
  for (const resource of body.resourceSpans ?? []) {
    const service = (resource.resource?.attributes ?? []).find((a: any) => a.key === "service.name")?.value
      ?.stringValue ?? "?"
    for (const scope of resource.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        const attributes: Record<string, AttributeValue> = {}
        for (const a of span.attributes ?? []) attributes[a.key] = valueOf(a.value)
        out.push({
          service,
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId || undefined,
          name: span.name,
          kind: span.kind,
          attributes,
          raw: span
        })
      }
    }
  }
  return out
}

export const startCollector = (): Promise<Collector> =>
  new Promise((resolve) => {
    const spans: Array<CollectedSpan> = []
    const protobufBodies: Array<{ contentType: string; bytes: number }> = []
    const other: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = []
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c) => chunks.push(c))
      req.on("end", () => {
        const body = Buffer.concat(chunks)
        const contentType = req.headers["content-type"] ?? ""
        if (req.method === "POST" && req.url === "/v1/traces") {
          if (contentType.includes("json")) spans.push(...flatten(JSON.parse(body.toString("utf8"))))
          else protobufBodies.push({ contentType, bytes: body.length })
          res.writeHead(200, { "content-type": "application/json" })
          res.end("{}")
          return
        }
        other.push({ path: req.url ?? "/", headers: req.headers, body: body.toString("utf8") })
        res.writeHead(200)
        res.end("ok")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        spans,
        protobufBodies,
        other,
        close: () => new Promise((done) => server.close(() => done()))
      })
    })
  })

/** Polls `check` every 200 ms until it returns a value or `timeoutMs` passes. */
export const eventually = async <A>(check: () => A | undefined, timeoutMs: number, what: string): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const found = check()
    if (found !== undefined) return found
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`timed out waiting for ${what}`)
}
