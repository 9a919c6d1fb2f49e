import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FiberRef, Tracer } from "effect"
import * as HttpTracing from "../src/HttpTracing.js"

/** The spans Effect's own tracer makes, kept for inspection. */
const recording = Effect.map(Effect.tracer, (native) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span(...args) {
      const span = native.span(...args)
      spans.push(span)
      return span
    },
    context: native.context
  })
  return { spans, tracer }
})

const serve = (
  method: string,
  url: string,
  status: number,
  headers: Record<string, string> = {}
) =>
  Effect.gen(function*() {
    const { spans, tracer } = yield* recording
    let tracerEnabled: boolean | undefined
    const app = Effect.map(FiberRef.get(FiberRef.currentTracerEnabled), (enabled) => {
      tracerEnabled = enabled
      return HttpServerResponse.empty({ status })
    })
    const request = HttpServerRequest.fromWeb(new Request(`http://localhost${url}`, { method, headers }))
    const response = yield* HttpTracing.traced(app, "req-1", url).pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, request),
      Effect.withTracer(tracer)
    )
    return { response, spans, tracerEnabled }
  })

describe("HttpTracing", () => {
  it.effect("names the request's span after its route and records no header or query string", () =>
    Effect.gen(function*() {
      const { spans } = yield* serve("POST", "/v1/messages?search=%2B4915112345678", 201, {
        authorization: "Bearer wa_test_secret",
        "user-agent": "x"
      })
      assert.strictEqual(spans.length, 1)
      const span = spans[0]!
      assert.strictEqual(span.name, "POST /v1/messages")
      assert.strictEqual(span.kind, "server")
      assert.deepStrictEqual(Object.fromEntries(span.attributes), {
        "http.request.method": "POST",
        "url.path": "/v1/messages",
        "http.route": "/v1/messages",
        "request_id": "req-1",
        "http.response.status_code": 201
      })
      assert.strictEqual(span.status._tag, "Ended")
      assert.isTrue(span.status._tag === "Ended" && Exit.isSuccess(span.status.exit))
    }))

  it.effect("uses the route template, not the ids in the path", () =>
    Effect.gen(function*() {
      const { spans } = yield* serve("GET", "/v1/messages/msg_123", 404)
      assert.strictEqual(spans[0]!.name, "GET /v1/messages/:messageId")
    }))

  it.effect("marks a 5xx answer as an error", () =>
    Effect.gen(function*() {
      const { spans } = yield* serve("GET", "/v1/messages", 503)
      const span = spans[0]!
      assert.strictEqual(span.attributes.get("error.type"), "503")
      assert.isTrue(span.status._tag === "Ended" && Exit.isFailure(span.status.exit))
    }))

  it.effect("continues a caller's W3C trace", () =>
    Effect.gen(function*() {
      const { spans } = yield* serve("GET", "/v1/messages", 200, {
        traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
      })
      assert.strictEqual(spans[0]!.traceId, "0af7651916cd43dd8448eb211c80319c")
    }))

  it.effect("does not trace probes, metrics or event streams, nor what they call", () =>
    Effect.gen(function*() {
      for (
        const [url, headers] of [
          ["/health", {}],
          ["/ready", {}],
          ["/metrics", {}],
          ["/v1/channels/ch_1/qr/stream", {}],
          ["/v1/anything", { accept: "text/event-stream" }]
        ] as const
      ) {
        const { spans, tracerEnabled } = yield* serve("GET", url, 200, headers)
        assert.strictEqual(spans.length, 0, url)
        assert.isFalse(tracerEnabled, url)
      }
    }))

  it.effect("passes requests through when tracing is off", () =>
    Effect.gen(function*() {
      const { spans, tracerEnabled } = yield* serve("POST", "/v1/messages", 201).pipe(Effect.withTracerEnabled(false))
      assert.strictEqual(spans.length, 0)
      assert.isFalse(tracerEnabled)
    }))
})
