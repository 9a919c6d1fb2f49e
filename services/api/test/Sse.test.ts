import { HttpServerResponse } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Layer, Stream, TestClock } from "effect"
import { ShutdownSignal } from "../src/ShutdownSignal.js"
import * as Sse from "../src/Sse.js"

/** A shutdown signal the test fires itself. */
const controlled = Effect.gen(function*() {
  const signal = yield* Deferred.make<void>()
  const layer = Layer.succeed(
    ShutdownSignal,
    ShutdownSignal.make({ await: Deferred.await(signal), isShuttingDown: Deferred.isDone(signal) })
  )
  return { layer, fire: Deferred.succeed(signal, undefined) }
})

const text = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Stream"
    ? Effect.map(Stream.runCollect(response.body.stream), (chunks) =>
      Chunk.toReadonlyArray(chunks).map((c) => new TextDecoder().decode(c)).join(""))
    : Effect.die("not a stream")

describe("event streams", () => {
  it.effect(
    "end with a retry: field and no event of their own when the server shuts down",
    () =>
      Effect.gen(function*() {
        const { fire, layer } = yield* controlled
        const frames = Stream.concat(Stream.make({ event: "qr.code", data: { n: 1 } }), Stream.never)
        const response = yield* Sse.response(frames).pipe(Effect.provide(layer))
        const body = yield* Effect.fork(text(response))
        yield* TestClock.adjust("50 millis")
        yield* fire
        const received = yield* body.await.pipe(Effect.flatten)
        assert.include(received, "event: qr.code\n")
        // the last block: only a retry field (an EventSource dispatches nothing for it, and reconnects after it)
        const blocks = received.split("\n\n").filter((b) => b !== "")
        const retry = /^retry: (\d+)$/.exec(blocks.at(-1) ?? "")
        assert.isNotNull(retry, received)
        assert.isAtLeast(Number(retry![1]), Sse.SHUTDOWN_RETRY_MS.min)
        assert.isAtMost(Number(retry![1]), Sse.SHUTDOWN_RETRY_MS.max)
        assert.deepStrictEqual(blocks.flatMap((b) => b.match(/^event: (.*)$/m)?.[1] ?? []), ["qr.code"])
      }),
    { timeout: 10_000 }
  )

  it.effect("end without it when their source ends", () =>
    Effect.gen(function*() {
      const { layer } = yield* controlled
      const response = yield* Sse.response(Stream.make({ event: "qr.connected", data: {} })).pipe(Effect.provide(layer))
      const received = yield* text(response)
      assert.include(received, "event: qr.connected\n")
      assert.notInclude(received, "retry:")
    }))
})
