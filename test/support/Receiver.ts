/** A real HTTP receiver on 127.0.0.1 for webhook tests: records every request; answers as told. */
import { Effect } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

export interface Received {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

type Answer = (request: Received, index: number) => {
  status: number
  headers?: Record<string, string>
  /** answer only after this long (timeouts) */
  delayMs?: number
}

export interface Receiver {
  readonly url: string
  readonly received: Array<Received>
}

export const receiver = (answer: Answer = () => ({ status: 200 })) =>
  Effect.acquireRelease(
    Effect.async<Receiver>((resume) => {
      const received: Array<Received> = []
      const current = answer
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c) => chunks.push(c))
        req.on("end", () => {
          const r = { path: req.url ?? "/", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") }
          received.push(r)
          const a = current(r, received.length - 1)
          const reply = () => {
            if (res.destroyed) return
            res.writeHead(a.status, a.headers ?? {})
            res.end("ok")
          }
          if (a.delayMs) setTimeout(reply, a.delayMs).unref()
          else reply()
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as AddressInfo).port
        resume(Effect.succeed(Object.assign({ url: `http://127.0.0.1:${port}`, received }, { server })))
      })
    }),
    (r) =>
      Effect.promise(() =>
        new Promise<void>((done) => {
          const server =
            (r as unknown as { server: { close: (cb: () => void) => void; closeAllConnections: () => void } }).server
          server.close(() => done())
          server.closeAllConnections()
        })
      )
  )

/** Polls until `predicate()` holds. */
export const eventually = <A>(check: () => A | undefined, timeoutMs = 20_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const value = check()
      if (value !== undefined && value !== false) return value
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage("condition not met in time")
  })
