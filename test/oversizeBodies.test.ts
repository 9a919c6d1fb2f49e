/**
 * A 413 a client can read (docs/API.md, hostile input): a body over `MAX_BODY_BYTES` is answered
 * 413 `PAYLOAD_TOO_LARGE` with `Connection: close`, and the server keeps reading and discarding
 * what the client still sends, for a bounded time and size, before it closes ("lingering close").
 * Closing at once would reset the connection under a client that is still writing, and its
 * kernel would drop the 413 before the client read it (Node's `http.request` saw EPIPE instead).
 */
import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { connect } from "node:net"
import { api, createKey, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const port = Effect.map(HttpServer.HttpServer, (server) => (server.address as HttpServer.TcpAddress).port)

const MiB = 1024 * 1024
const CHUNK = Buffer.alloc(64 * 1024, "a")

type Outcome =
  | { readonly _tag: "Answered"; readonly status: number; readonly connection: string | undefined; readonly body: any }
  | { readonly _tag: "Failed"; readonly error: string }

/** The status line, headers and JSON body of a raw HTTP/1.1 answer (`Content-Length` framed). */
const parseAnswer = (raw: Buffer): Outcome => {
  const text = raw.toString("utf8")
  const split = text.indexOf("\r\n\r\n")
  if (split < 0) return { _tag: "Failed", error: `no answer: ${JSON.stringify(text.slice(0, 200))}` }
  const [statusLine, ...lines] = text.slice(0, split).split("\r\n")
  const headers = new Map(
    lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()])
  )
  const length = Number(headers.get("content-length") ?? -1)
  const body = text.slice(split + 4)
  if (Buffer.byteLength(body) !== length) return { _tag: "Failed", error: `truncated answer: ${text.slice(0, 300)}` }
  return {
    _tag: "Answered",
    status: Number(statusLine!.split(" ")[1]),
    connection: headers.get("connection"),
    body: JSON.parse(body)
  }
}

/**
 * A client that keeps writing: it sends the whole body (`bytes`, chunked or announced with
 * `Content-Length`) chunk after chunk, and reads the answer only after its last write, as simple
 * clients do. A write that fails (EPIPE, ECONNRESET: the server closed
 * under it) means it never reads the answer.
 */
const upload = (p: number, token: string, bytes: number, chunked: boolean) =>
  Effect.async<Outcome>((resume) => {
    let settled = false
    const settle = (outcome: Outcome) => {
      if (settled) return
      settled = true
      socket.destroy()
      resume(Effect.succeed(outcome))
    }
    const received: Array<Buffer> = []
    const socket = connect({ host: "127.0.0.1", port: p })
    socket.pause()
    socket.on("data", (c: Buffer) => received.push(c))
    socket.on("end", () => settle(parseAnswer(Buffer.concat(received))))
    socket.on("error", (e) =>
      settle({ _tag: "Failed", error: `${(e as { code?: string }).code ?? e.message} after ${sent} bytes` }))
    const head = [
      "POST /v1/messages HTTP/1.1",
      "host: 127.0.0.1",
      `authorization: Bearer ${token}`,
      "content-type: application/json",
      chunked ? "transfer-encoding: chunked" : `content-length: ${bytes}`,
      "",
      ""
    ].join("\r\n")
    socket.write(head)
    let sent = 0
    // one chunk at a time, the next once the last left (a loopback socket's buffers would
    // otherwise take all 2 MiB at once, before the server answers)
    const writeMore = () => {
      if (settled) {
        return
      }
      if (sent >= bytes) {
        // every byte written: now read the answer
        return void socket.write(chunked ? "0\r\n\r\n" : "", () =>
          socket.resume())
      }
      const chunk = CHUNK.subarray(0, Math.min(CHUNK.length, bytes - sent))
      sent += chunk.length
      const framed = chunked
        ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")])
        : chunk
      socket.write(framed, () => setTimeout(writeMore, 1))
    }
    socket.once("connect", writeMore)
  })

describe("bodies over the limit", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    for (const chunked of [true, false]) {
      it.effect(
        `answers a client that keeps writing 2 MiB ${
          chunked ? "chunked" : "with Content-Length"
        } a readable 413, 20 times in a row`,
        () =>
          Effect.gen(function*() {
            const user = yield* signUp()
            const key = yield* createKey(user)
            const p = yield* port
            const outcomes: Array<Outcome> = []
            for (let i = 0; i < 20; i++) outcomes.push(yield* upload(p, key.secret, 2 * MiB, chunked))
            for (const [i, outcome] of outcomes.entries()) {
              assert.strictEqual(outcome._tag, "Answered", `try ${i + 1}: ${JSON.stringify(outcome)}`)
              if (outcome._tag !== "Answered") continue
              assert.strictEqual(outcome.status, 413, `try ${i + 1}`)
              assert.strictEqual(outcome.connection, "close", `try ${i + 1}`)
              assert.strictEqual(outcome.body.error.code, "PAYLOAD_TOO_LARGE", `try ${i + 1}`)
              assert.strictEqual(outcome.body.error.details.limit_bytes, MiB, `try ${i + 1}`)
            }
            const [health, response] = yield* (yield* api()).health.health({ withResponse: true })
            assert.strictEqual(response.status, 200)
            assert.strictEqual(health.status, "ok")
          })
      )
    }
  })
})
