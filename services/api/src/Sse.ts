/**
 * Server-sent event responses that end cleanly: when their source ends, after a maximum
 * duration, or when the server starts shutting down (so `server.close()` is never held open by
 * a stream). A stream cut by a shutdown adds no frame of its own (the QR stream has exactly the
 * frames its contract lists): it ends with an SSE `retry:` field, the milliseconds a client waits
 * before it reconnects (an `EventSource` does so by itself; another api node answers), then
 * closes. A comment heartbeat keeps proxies from timing the connection out.
 */
import { HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Random, Stream } from "effect"
import { ShutdownSignal } from "./ShutdownSignal.js"

export interface SseFrame {
  readonly event: string
  readonly data: unknown
  readonly id?: string | undefined
}

const encoder = new TextEncoder()

/**
 * How long a client waits before reconnecting to a stream cut by a shutdown: spread over a second
 * and a half, so the streams of a stopping node do not all land on the next one at once.
 */
export const SHUTDOWN_RETRY_MS = { min: 500, max: 2_000 } as const

/** The last bytes of a stream the server ends because it is shutting down: a `retry:` field, no event. */
export const encodeRetry = (milliseconds: number): Uint8Array => encoder.encode(`retry: ${milliseconds}\n\n`)

export const encodeFrame = (frame: SseFrame): Uint8Array =>
  encoder.encode(
    `${frame.id === undefined ? "" : `id: ${frame.id}\n`}event: ${frame.event}\ndata: ${JSON.stringify(frame.data)}\n\n`
  )

export const response = <E>(
  frames: Stream.Stream<SseFrame, E>,
  options: { readonly heartbeat?: Duration.DurationInput; readonly maxDuration?: Duration.DurationInput } = {}
) =>
  Effect.map(ShutdownSignal, (shutdown) => {
    const heartbeats = Stream.tick(options.heartbeat ?? "15 seconds").pipe(
      Stream.drop(1),
      Stream.map(() => encoder.encode(": heartbeat\n\n"))
    )
    const live = Stream.merge(Stream.map(frames, encodeFrame), heartbeats, { haltStrategy: "left" }).pipe(
      Stream.interruptWhen(shutdown.await),
      Stream.interruptAfter(options.maxDuration ?? "5 minutes"),
      Stream.catchAllCause(() => Stream.empty)
    )
    // a stream cut by a shutdown (a deploy, a rolling restart) says when to reconnect, then closes
    const farewell = Stream.unwrap(Effect.flatMap(shutdown.isShuttingDown, (done) =>
      done
        ? Effect.map(
          Random.nextIntBetween(SHUTDOWN_RETRY_MS.min, SHUTDOWN_RETRY_MS.max + 1),
          (ms) => Stream.make(encodeRetry(ms))
        )
        : Effect.succeed(Stream.empty)))
    const body = Stream.concat(live, farewell)
    return HttpServerResponse.stream(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
    })
  })
