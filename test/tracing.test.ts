/**
 * Tracing in one process (infra `Tracing`, `Logging`): off without an endpoint (nothing exported,
 * no trace ids in log lines); with one, spans reach the collector and a log line written inside a
 * span carries its ids; background statements start no trace; what is exported is scrubbed.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Logging, TraceScrub, Tracing } from "@switchboard/infra"
import { ConfigProvider, Effect, FiberRef, Layer, Logger, Schedule } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { startCollector } from "./support/OtlpCollector.js"
import type { Collector } from "./support/OtlpCollector.js"

/** Runs `body` with tracing from `env` (as if it were the process's environment) and the JSON log lines captured. */
const run = <A, E>(env: Record<string, string>, body: Effect.Effect<A, E>) => {
  const lines: Array<Record<string, any>> = []
  const capture = Logger.replace(
    Logger.defaultLogger,
    Logger.map(Logging.withTraceIds(Logger.jsonLogger), (line) => {
      lines.push(JSON.parse(line))
    })
  )
  return body.pipe(
    Effect.provide(Tracing.layerFromEnv("tracing-test").pipe(Layer.provideMerge(capture))),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.map((result) => ({ result, lines }))
  )
}

const work = Effect.gen(function*() {
  yield* Effect.logInfo("outside a span")
  yield* Effect.logInfo("inside a span").pipe(Effect.withSpan("work", { attributes: { step: 1 } }))
  // a statement nobody traced (a polling loop) and one inside a traced operation
  yield* Effect.void.pipe(Effect.withSpan("sql.execute"))
  yield* Effect.void.pipe(Effect.withSpan("sql.execute"), Effect.withSpan("operation"))
  return yield* FiberRef.get(FiberRef.currentTracerEnabled)
})

describe("tracing", () => {
  let collector: Collector
  beforeAll(async () => {
    collector = await startCollector()
  })
  afterAll(() => collector.close())

  it.live("is off without an endpoint: nothing exported, no trace ids in log lines", () =>
    Effect.gen(function*() {
      const before = collector.spans.length + collector.protobufBodies.length
      const { lines, result: enabled } = yield* run({ OTEL_SERVICE_NAME: "unused" }, work)
      assert.isFalse(enabled, "the tracer is switched off")
      assert.strictEqual(lines.length, 2)
      for (const line of lines) {
        assert.notProperty(line.annotations, "trace_id")
        assert.notProperty(line.annotations, "span_id")
      }
      // told where to send but told not to: still nothing
      yield* run({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_TRACES_EXPORTER: "none" }, work)
      assert.strictEqual(collector.spans.length + collector.protobufBodies.length, before)
    }))

  it.live("exports spans and writes trace ids into the log lines written inside one", () =>
    Effect.gen(function*() {
      const { lines, result: enabled } = yield* run({
        OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/`,
        OTEL_SERVICE_NAME: "tracing-unit",
        OTEL_BSP_SCHEDULE_DELAY: "50"
      }, work)
      assert.isTrue(enabled)
      const outside = lines.find((l) => l.message === "outside a span")!
      const inside = lines.find((l) => l.message === "inside a span")!
      assert.notProperty(outside.annotations, "trace_id")
      const mine = collector.spans.filter((s) => s.service === "tracing-unit")
      const span = mine.find((s) => s.name === "work")
      assert.isDefined(span, "flushed when the layer closes")
      assert.strictEqual(inside.annotations.trace_id, span!.traceId)
      assert.strictEqual(inside.annotations.span_id, span!.spanId)
      assert.strictEqual(span!.attributes["step"], 1)
      const operation = mine.find((s) => s.name === "operation")!
      const statements = mine.filter((s) => s.name === "sql.execute")
      assert.strictEqual(statements.length, 1, "the root statement is not exported")
      assert.strictEqual(statements[0]!.parentSpanId, operation.spanId)
    }))

  it.live("sends protobuf when told to (JSON otherwise)", () =>
    Effect.gen(function*() {
      const before = collector.protobufBodies.length
      yield* run({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf",
        OTEL_BSP_SCHEDULE_DELAY: "50"
      }, work)
      assert.isAbove(collector.protobufBodies.length, before)
      assert.strictEqual(collector.protobufBodies.at(-1)!.contentType, "application/x-protobuf")
    }))

  it.scopedLive("abandons an export the collector does not answer within OTEL_EXPORTER_OTLP_TIMEOUT", () =>
    Effect.gen(function*() {
      const hanging = yield* Effect.acquireRelease(
        Effect.async<{ server: Server; requests: () => number }>((resume) => {
          let requests = 0
          const server = createServer(() => {
            requests++ // never answered
          })
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, requests: () => requests })))
        }),
        ({ server }) =>
          Effect.async<void>((resume) => {
            server.closeAllConnections()
            server.close(() => resume(Effect.void))
          })
      )
      const { port } = hanging.server.address() as AddressInfo
      yield* run(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
          OTEL_EXPORTER_OTLP_TIMEOUT: "200",
          OTEL_BSP_SCHEDULE_DELAY: "50"
        },
        // until the second export arrives (about 250 ms: a 200 ms timeout and 50 ms on); a hung
        // first export would stay the only one, so 30 s tells the two apart at any load
        Effect.zipRight(
          work,
          Effect.sync(() => hanging.requests()).pipe(
            Effect.repeat({ until: (n) => n >= 2, schedule: Schedule.spaced("50 millis") }),
            Effect.timeout("30 seconds"),
            Effect.ignore
          )
        )
      )
      // the first attempt was given up and tried again (a hung one would be the only one)
      assert.isAtLeast(hanging.requests(), 2)
    }))

  it.live("refuses an exporter protocol it cannot speak", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        run({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, work)
      )
      assert.isTrue(exit._tag === "Failure")
    }))

  it("scrubs credentials, query values and phone numbers from what is exported", () => {
    const key = `wa_test_${"a1B2".repeat(10)}`
    const text = TraceScrub.scrubText(
      `key ${key} secret whsec_abcdefgh12345678 jwt eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl ` +
        `Authorization: Bearer abc.def /v1/contacts?search=%2B4915112345678&limit=5 to +49 151 1234567 password=hunter2`
    )
    for (const leaked of [key, "whsec_abcdefgh", "eyJhbGciOi", "abc.def", "4915112345678", "151 1234567", "hunter2"]) {
      assert.notInclude(text, leaked)
    }
    assert.include(text, "/v1/contacts?search=[REDACTED]&limit=[REDACTED]")
    assert.strictEqual(
      TraceScrub.scrubText("msg_01M8A0HQ sql $1 at 2026-11-25T18:47:46Z"),
      "msg_01M8A0HQ sql $1 at 2026-11-25T18:47:46Z"
    )
  })

  it("reads OTLP headers in the OpenTelemetry format", () => {
    assert.deepStrictEqual(Tracing.parseHeaders("Api-Key=a%20b, x-team = ops ,broken"), {
      "api-key": "a b",
      "x-team": "ops"
    })
  })
})
