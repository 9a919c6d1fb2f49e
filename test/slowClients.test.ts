/**
 * Slow clients are cut off at `HTTP_HEADERS_TIMEOUT` / `HTTP_REQUEST_TIMEOUT` with a 408 in the
 * envelope, while other connections are served. The timeouts are shortened to about a second.
 */
import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { connect } from "node:net"
import { api, refused } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const port = Effect.map(HttpServer.HttpServer, (server) => (server.address as HttpServer.TcpAddress).port)

/** Opens a connection, writes `bytes` and never finishes; resolves with what the server wrote and when it closed. */
const stall = (p: number, bytes: string) =>
  Effect.async<{ received: string; closedAfterMs: number }>((resume) => {
    const started = Date.now()
    const socket = connect(p, "127.0.0.1")
    let received = ""
    socket.on("data", (chunk) => (received += chunk.toString("utf8")))
    socket.on("close", () => resume(Effect.succeed({ received, closedAfterMs: Date.now() - started })))
    socket.on("error", () => {})
    socket.write(bytes)
  })

const expect408 = (result: { received: string; closedAfterMs: number }, maxMs: number) => {
  assert.match(result.received, /^HTTP\/1\.1 408 /)
  const body = JSON.parse(result.received.slice(result.received.indexOf("\r\n\r\n") + 4))
  assert.strictEqual(body.error.code, "REQUEST_TIMEOUT")
  assert.isBelow(result.closedAfterMs, maxMs)
}

describe("slow clients", () => {
  layer(
    TestApp.layer({
      headersTimeout: Duration.millis(800),
      requestTimeout: Duration.millis(1500),
      keepAliveTimeout: Duration.millis(500)
    }),
    { excludeTestServices: true, timeout: 120_000 }
  )((it) => {
    it.effect("cuts off a client that never finishes its headers, and serves others meanwhile", () =>
      Effect.gen(function*() {
        const slow = yield* Effect.fork(stall(yield* port, "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nX-Slow: "))
        yield* Effect.sleep("300 millis")
        const [health, response] = yield* (yield* api()).health.health({ withResponse: true })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(health.status, "ok")
        expect408(yield* slow, 5_000)
      }))

    it.effect("cuts off a client that never finishes its body, and serves others meanwhile", () =>
      Effect.gen(function*() {
        const slow = yield* Effect.fork(
          stall(
            yield* port,
            "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"email\":"
          )
        )
        yield* Effect.sleep("300 millis")
        const login = yield* refused((yield* api()).auth.login({ payload: { email: "a@b.co", password: "wrong" } }))
        assert.strictEqual(login.status, 401)
        expect408(yield* slow, 6_000)
      }))

    it.effect("closes an idle keep-alive connection after HTTP_KEEP_ALIVE_TIMEOUT", () =>
      Effect.gen(function*() {
        const idle = yield* stall(yield* port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert.match(idle.received, /^HTTP\/1\.1 200 /)
        assert.isBelow(idle.closedAfterMs, 4_000)
      }))
  })
})
