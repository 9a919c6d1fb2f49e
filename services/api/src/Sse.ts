/**
 * Server-sent event responses that end cleanly: when their source ends, after a maximum
 * duration, or when the server starts shutting down (so `server.close()` is never held open by
 * a stream; the last frame is then `server.shutdown`, telling the client to reconnect, which lands
 * on another api node). A comment heartbeat keeps proxies from timing the connection out.
 */
import { HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Stream } from "effect"
import { ShutdownSignal } from "./ShutdownSignal.js"

export interface SseFrame {
  readonly event: string
  readonly data: unknown
  readonly id?: string | undefined
}

const encoder = new TextEncoder()

/** The last frame of a stream the server ends because it is shutting down. */
export const SHUTDOWN_EVENT = "server.shutdown"

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
    // a stream cut by a shutdown (a deploy, a rolling restart) says so last: reconnect elsewhere
    const farewell = Stream.unwrap(Effect.map(shutdown.isShuttingDown, (done) =>
      done
        ? Stream.make(encodeFrame({ event: SHUTDOWN_EVENT, data: { reason: "server_shutting_down", reconnect: true } }))
        : Stream.empty))
    const body = Stream.concat(live, farewell)
    return HttpServerResponse.stream(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
    })
  })
