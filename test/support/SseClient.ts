/** Reads a server-sent event stream from the test app frame by frame, as a browser's EventSource would. */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Fiber, Option, Queue, type Scope, Stream } from "effect"
import { PathPrefix } from "./Fixtures.js"

export interface SseFrame {
  readonly event: string
  readonly data: any
  readonly id: string | undefined
}

export interface SseStream {
  readonly status: number
  readonly headers: Record<string, string>
  /** every frame so far, in order */
  readonly frames: Array<SseFrame>
  /** comment lines seen (heartbeats) */
  readonly comments: Array<string>
  /** the next frame (frames already taken are skipped); `None` when the stream ended first */
  readonly next: (timeout?: Duration.DurationInput) => Effect.Effect<Option.Option<SseFrame>>
  /** the next frame named `event`, skipping others; fails the test with what was seen otherwise */
  readonly nextNamed: (event: string, timeout?: Duration.DurationInput) => Effect.Effect<SseFrame>
  /** completes when the server ended the stream */
  readonly ended: Effect.Effect<void>
}

const parse = (block: string): SseFrame | string | undefined => {
  let event = "message"
  let id: string | undefined
  const data: Array<string> = []
  const comments: Array<string> = []
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) comments.push(line.slice(1).trim())
    else if (line.startsWith("event:")) event = line.slice(6).trim()
    else if (line.startsWith("id:")) id = line.slice(3).trim()
    else if (line.startsWith("data:")) data.push(line.slice(5).trim())
  }
  if (data.length === 0) return comments.length > 0 ? comments.join("\n") : undefined
  return { event, id, data: JSON.parse(data.join("\n")) }
}

export const open = (
  path: string,
  options: { readonly token: string; readonly workspace?: string; readonly headers?: Record<string, string> }
): Effect.Effect<SseStream, never, HttpClient.HttpClient | Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const prefix = yield* PathPrefix
    let req = HttpClientRequest.get(`${prefix}${path}`).pipe(
      HttpClientRequest.setHeader("authorization", `Bearer ${options.token}`),
      HttpClientRequest.setHeader("accept", "text/event-stream")
    )
    if (options.workspace) req = HttpClientRequest.setHeader(req, "x-workspace-id", options.workspace)
    for (const [k, v] of Object.entries(options.headers ?? {})) req = HttpClientRequest.setHeader(req, k, v)
    const response = yield* client.execute(req).pipe(Effect.orDie)
    const frames: Array<SseFrame> = []
    const comments: Array<string> = []
    const queue = yield* Queue.unbounded<Option.Option<SseFrame>>()
    let buffer = ""
    const reader = yield* response.stream.pipe(
      Stream.decodeText(),
      Stream.runForEach((chunk) =>
        Effect.gen(function*() {
          buffer += chunk
          let end = buffer.indexOf("\n\n")
          while (end >= 0) {
            const parsed = parse(buffer.slice(0, end))
            buffer = buffer.slice(end + 2)
            end = buffer.indexOf("\n\n")
            if (typeof parsed === "string") comments.push(parsed)
            else if (parsed !== undefined) {
              frames.push(parsed)
              yield* Queue.offer(queue, Option.some(parsed))
            }
          }
        })
      ),
      Effect.ignore,
      Effect.ensuring(Queue.offer(queue, Option.none())),
      Effect.forkScoped
    )
    const next = (timeout: Duration.DurationInput = "20 seconds") =>
      Queue.take(queue).pipe(
        Effect.tap((f) => (Option.isNone(f) ? Queue.offer(queue, f) : Effect.void)),
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () =>
            new Error(
              `no frame within ${Duration.format(Duration.decode(timeout))}; saw ${
                frames.map((f) => f.event).join(", ")
              }`
            )
        }),
        Effect.orDie
      )
    const nextNamed = (event: string, timeout: Duration.DurationInput = "20 seconds") =>
      Effect.gen(function*() {
        while (true) {
          const frame = yield* next(timeout)
          if (Option.isNone(frame)) {
            return yield* Effect.dieMessage(
              // each frame's data too: a state frame says why the stream ended
              `stream ended before ${event}; saw ${
                frames.map((f) => `${f.event} ${JSON.stringify(f.data)}`).join(", ")
              }`
            )
          }
          if (frame.value.event === event) return frame.value
        }
      })
    return {
      status: response.status,
      headers: response.headers as Record<string, string>,
      frames,
      comments,
      next,
      nextNamed,
      ended: Fiber.join(reader)
    }
  })
