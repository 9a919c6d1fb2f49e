/**
 * Traces (docs/CONFIGURATION.md "Tracing"). With `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, every span is exported over OTLP/HTTP by the
 * Effect-native exporter of `@effect/opentelemetry`, in JSON unless
 * `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf` (OpenTelemetry's own default is protobuf, but this
 * exporter's protobuf encoder costs ~47 µs of CPU per span against ~17 µs for JSON, measured in
 * bench/RESULTS.md "Tracing cost"; collectors take both on the same path); the cluster carries
 * the trace from the api node to the runners in its envelopes. Without an endpoint Effect's
 * tracer is switched off: a span is then a shared no-op object, nothing records attributes or
 * draws ids, and nothing is exported (same section).
 *
 * Two rules on top of the exporter:
 * - Sampling is parent-based: a span follows its parent's decision (also across processes and
 *   from an incoming `traceparent`); a root span is sampled at `OTEL_TRACES_SAMPLER_ARG` for the
 *   ratio samplers, always otherwise. A SQL statement, transaction or repository call that is a
 *   root (the cluster's own bookkeeping, polling loops and sweepers, migrations) is never
 *   sampled: only statements inside a traced operation are worth a trace.
 * - What leaves the process is scrubbed (`TraceScrub`): whatever slipped into a span name, attribute,
 *   event or status that looks like an API key, a webhook secret, a JWT, a bearer credential, a
 *   query string's value or a phone number is replaced. Log lines written inside a span travel as
 *   its events, so this covers them too. The spans themselves do not record them in the first place: SQL
 *   spans carry the statement with placeholders, never parameter values; the HTTP span records
 *   method, route, path and status, never headers or the query string (api `HttpTracing`).
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { FetchHttpClient, HttpClient, HttpClientError } from "@effect/platform"
import {
  Config,
  ConfigError,
  Context,
  Duration,
  Effect,
  Either,
  FiberRef,
  FiberRefs,
  Layer,
  Option,
  Redacted,
  Tracer
} from "effect"
import { scrub, type TraceData } from "./TraceScrub.js"

export interface TracingConfig {
  /** Where spans are POSTed; `None`: tracing is off */
  readonly url: Option.Option<string>
  /** `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`, e.g. a collector's API key */
  readonly headers: Redacted.Redacted<Record<string, string>>
  readonly serviceName: string
  readonly protocol: "http/protobuf" | "http/json"
  /** Root spans sampled (1: all) */
  readonly ratio: number
  readonly exportInterval: Duration.Duration
  readonly maxBatchSize: number
  /** An export that takes longer is abandoned (the exporter then pauses for a minute) */
  readonly timeout: Duration.Duration
}

const PROTOCOLS = ["http/protobuf", "http/json"] as const

/** `key=value,key2=value2`, values URL-encoded (the OpenTelemetry format). */
export const parseHeaders = (raw: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const entry of raw.split(",")) {
    const at = entry.indexOf("=")
    if (at <= 0) continue
    const key = entry.slice(0, at).trim().toLowerCase()
    try {
      headers[key] = decodeURIComponent(entry.slice(at + 1).trim())
    } catch {
      headers[key] = entry.slice(at + 1).trim()
    }
  }
  return headers
}

const optionalString = (name: string) =>
  Config.option(Config.string(name)).pipe(Config.map(Option.filter((s) => s.trim() !== "")))

/** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`. */
const url = Config.all({
  traces: optionalString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  base: optionalString("OTEL_EXPORTER_OTLP_ENDPOINT"),
  exporter: Config.string("OTEL_TRACES_EXPORTER").pipe(Config.withDefault("otlp")),
  disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false))
}).pipe(Config.mapOrFail(({ base, disabled, exporter, traces }) => {
  const chosen = exporter.trim().toLowerCase()
  if (disabled || chosen === "none") return Either.right(Option.none<string>())
  if (chosen !== "otlp") {
    return Either.left(ConfigError.InvalidData(["OTEL_TRACES_EXPORTER"], "Expected otlp or none"))
  }
  return Either.right(Option.orElse(
    Option.map(traces, (s) => s.trim()),
    () => Option.map(base, (s) => `${s.trim().replace(/\/+$/, "")}/v1/traces`)
  ))
}))

const protocol = Config.all({
  traces: optionalString("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
  shared: optionalString("OTEL_EXPORTER_OTLP_PROTOCOL")
}).pipe(Config.mapOrFail(({ shared, traces }) => {
  const chosen = Option.getOrElse(Option.orElse(traces, () => shared), () => "http/json").trim().toLowerCase()
  return (PROTOCOLS as ReadonlyArray<string>).includes(chosen)
    ? Either.right(chosen as TracingConfig["protocol"])
    : Either.left(
      ConfigError.InvalidData(
        ["OTEL_EXPORTER_OTLP_PROTOCOL"],
        `Expected http/protobuf or http/json (grpc is not supported): got ${chosen}`
      )
    )
}))

/** The samplers of the OpenTelemetry SDKs that make sense here; all are parent-based. */
const ratio = Config.all({
  sampler: Config.string("OTEL_TRACES_SAMPLER").pipe(Config.withDefault("parentbased_always_on")),
  arg: optionalString("OTEL_TRACES_SAMPLER_ARG")
}).pipe(Config.mapOrFail(({ arg, sampler }) => {
  switch (sampler.trim().toLowerCase()) {
    case "always_on":
    case "parentbased_always_on":
      return Either.right(1)
    case "always_off":
    case "parentbased_always_off":
      return Either.right(0)
    case "traceidratio":
    case "parentbased_traceidratio": {
      const value = Number(Option.getOrElse(arg, () => "1"))
      return Number.isFinite(value) && value >= 0 && value <= 1
        ? Either.right(value)
        : Either.left(ConfigError.InvalidData(["OTEL_TRACES_SAMPLER_ARG"], "Expected a ratio from 0 to 1"))
    }
    default:
      return Either.left(
        ConfigError.InvalidData(
          ["OTEL_TRACES_SAMPLER"],
          "Expected parentbased_always_on, parentbased_always_off or parentbased_traceidratio"
        )
      )
  }
}))

/** `defaultServiceName`: what the process is (`switchboard-api`, `switchboard-runner`, ...). */
export const config = (defaultServiceName: string) =>
  Config.all({
    url,
    headers: Config.all({
      traces: optionalString("OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
      shared: optionalString("OTEL_EXPORTER_OTLP_HEADERS")
    }).pipe(
      Config.map(({ shared, traces }) => ({
        ...Option.match(shared, { onNone: () => ({}), onSome: parseHeaders }),
        ...Option.match(traces, { onNone: () => ({}), onSome: parseHeaders })
      })),
      Config.map(Redacted.make)
    ),
    serviceName: Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault(defaultServiceName)),
    protocol,
    ratio,
    exportInterval: Config.integer("OTEL_BSP_SCHEDULE_DELAY").pipe(
      Config.withDefault(5000),
      Config.map((ms) => Duration.millis(Math.max(10, ms)))
    ),
    maxBatchSize: Config.integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").pipe(Config.withDefault(512)),
    timeout: Config.integer("OTEL_EXPORTER_OTLP_TIMEOUT").pipe(
      Config.withDefault(10_000),
      Config.map((ms) => Duration.millis(Math.max(100, ms)))
    )
  })

// ---------------------------------------------------------------------------------------------
// Sampling

const ZERO_TRACE = "00000000000000000000000000000000"
const ZERO_SPAN = "0000000000000000"

const UnsampledProto = {
  _tag: "Span" as const,
  spanId: ZERO_SPAN,
  sampled: false,
  attribute() {},
  event() {},
  end() {},
  addLinks() {}
}

/** A span that is not recorded; its children (here and in other processes) are not either. */
const unsampled = (
  name: string,
  parent: Option.Option<Tracer.AnySpan>,
  context: Context.Context<never>,
  kind: Tracer.SpanKind,
  startTime: bigint
): Tracer.Span =>
  Object.assign(Object.create(UnsampledProto), {
    name,
    parent,
    context,
    kind,
    traceId: Option.isSome(parent) ? parent.value.traceId : ZERO_TRACE,
    status: { _tag: "Started", startTime },
    attributes: new Map(),
    links: []
  })

/**
 * Root spans not worth a trace of their own: a statement, a transaction or a repository call
 * that no traced operation made is background bookkeeping (polling loops, sweepers, the
 * cluster's own tables, migrations); a trace every second per runner would bury the others.
 */
const BACKGROUND_ROOT = /^(?:sql\.|[A-Za-z]+Repo\.)/

/** Parent-based sampling around an exporting tracer (see the module's header). */
export const sampled = (inner: Tracer.Tracer, ratio: number): Tracer.Tracer =>
  Tracer.make({
    span(name, parent, context, links, startTime, kind, options) {
      if (Option.isSome(parent)) {
        const p = parent.value
        // a parent from a process whose tracer is off carries the id "noop"
        if (!p.sampled || p.traceId === "noop") return unsampled(name, parent, context, kind, startTime)
        return inner.span(name, parent, context, links, startTime, kind, options)
      }
      if (BACKGROUND_ROOT.test(name) || (ratio < 1 && Math.random() >= ratio)) {
        return unsampled(name, parent, context, kind, startTime)
      }
      return inner.span(name, parent, context, links, startTime, kind, options)
    },
    context: (f, fiber) => inner.context(f, fiber)
  })

const scrubbingSerialization = (protocol: TracingConfig["protocol"]) =>
  Layer.effect(
    OtlpSerialization.OtlpSerialization,
    Effect.map(OtlpSerialization.OtlpSerialization, (encode) => ({
      traces: (data: unknown) => encode.traces(scrub(data as TraceData)),
      metrics: encode.metrics,
      logs: encode.logs
    }))
  ).pipe(
    Layer.provide(protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf)
  )

// ---------------------------------------------------------------------------------------------
// Layers

/** `fetch`, bounded: a collector that hangs must not pile up exports (and their spans) in memory. */
const exportClient = (timeout: Duration.Duration) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) =>
      HttpClient.transform(client, (response, request) =>
        Effect.timeoutFail(response, {
          duration: timeout,
          onTimeout: () =>
            new HttpClientError.RequestError({ request, reason: "Transport", description: "OTLP export timed out" })
        })))
  ).pipe(Layer.provide(FetchHttpClient.layer))

/** Exports to `config.url`; spans sampled and scrubbed as above. */
export const layerExporting = (config: TracingConfig & { readonly url: Option.Some<string> }) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const inner = yield* OtlpTracer.make({
      url: config.url.value,
      resource: { serviceName: config.serviceName },
      headers: Redacted.value(config.headers),
      exportInterval: config.exportInterval,
      maxBatchSize: config.maxBatchSize
    })
    return Layer.setTracer(sampled(inner, config.ratio))
  })).pipe(
    Layer.provide([exportClient(config.timeout), scrubbingSerialization(config.protocol)])
  )

/** The collector's address for a log line: no user, password or query. */
const withoutCredentials = (raw: string) => {
  try {
    const u = new URL(raw)
    return `${u.protocol}//${u.host}${u.pathname}`
  } catch {
    return "(an invalid URL)"
  }
}

/** The process's tracing from `OTEL_*` (module header); off when no endpoint is set. */
export const layerFromEnv = (defaultServiceName: string): Layer.Layer<never> =>
  Layer.unwrapEffect(Effect.map(config(defaultServiceName), (c) =>
    Option.isSome(c.url)
      ? Layer.merge(
        layerExporting({ ...c, url: c.url }),
        Layer.effectDiscard(Effect.logInfo(`traces are exported to ${withoutCredentials(c.url.value)} (${c.protocol})`))
      )
      : Layer.setTracerEnabled(false))).pipe(Layer.orDie)

/** The span a log line or a request is in, when it is recorded (sampled); `undefined` otherwise. */
export const recordedSpan = (refs: FiberRefs.FiberRefs): Tracer.AnySpan | undefined => {
  const span = Context.getOption(FiberRefs.getOrDefault(refs, FiberRef.currentContext), Tracer.ParentSpan)
  return Option.isSome(span) && span.value.sampled && span.value.traceId !== "noop" ? span.value : undefined
}
