/** Requests the typed client cannot send: a request line exactly as given, bytes exactly as given. */
import { HttpServer } from "@effect/platform"
import { Effect } from "effect"
import { request as httpRequest } from "node:http"

export interface RawReply {
  readonly status: number
  readonly text: string
  // tests read nested members of the envelope and let the assertions check them
  readonly body: any
}

/** The port of the app under test. */
export const port = Effect.map(HttpServer.HttpServer, (server) => (server.address as HttpServer.TcpAddress).port)

/**
 * One request to `target` (path and query, sent as they are: not encoded again) with `body`
 * written as it is, in 64 KiB pieces when `chunked`; answered as status, text and parsed JSON.
 */
export const rawRequest = (
  p: number,
  method: string,
  target: string,
  options: { readonly headers?: Record<string, string>; readonly body?: Buffer | string; readonly chunked?: boolean } =
    {}
) =>
  Effect.async<RawReply>((resume) => {
    const req = httpRequest(
      { host: "127.0.0.1", port: p, method, path: target, headers: options.headers ?? {} },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (c: string) => (text += c))
        res.on("end", () => {
          let body: any = undefined
          try {
            body = JSON.parse(text)
          } catch {
            body = undefined
          }
          resume(Effect.succeed({ status: res.statusCode ?? 0, text, body }))
        })
      }
    )
    req.on("error", (e) => resume(Effect.die(e)))
    const body = typeof options.body === "string" ? Buffer.from(options.body) : options.body
    if (options.chunked && body !== undefined) {
      for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.subarray(i, i + 64 * 1024))
      req.end()
    } else {
      req.end(body)
    }
  })
