/**
 * Hostile input at the HTTP edge: deep nesting, U+0000, chunked bodies over the limit, non-JSON
 * bodies, Node's own parser errors. Each is answered in the error envelope, never with a 500, a
 * reset connection or an echo of what was submitted.
 */
import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { Effect, Schema } from "effect"
import { request as httpRequest } from "node:http"
import { connect } from "node:net"
import { bodyOf, createKey, envelopeOf, request, sandboxSetup, signUp } from "./support/Fixtures.js"
import type { Reply } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const SECRET = "s3cr3t-value-that-must-not-come-back"

const nested = (depth: number, inner = "1") => "[".repeat(depth) + inner + "]".repeat(depth)

const assertEnvelope = (reply: Reply, status: number, code: string, path0?: ReadonlyArray<string | number>) => {
  assert.strictEqual(reply.status, status, reply.text.slice(0, 300))
  assert.deepStrictEqual(Object.keys(Object(reply.body)), ["error"])
  const error = envelopeOf(reply)
  assert.strictEqual(error.code, code)
  assert.isString(error.message)
  assert.notInclude(reply.text, SECRET)
  if (path0) assert.deepStrictEqual(error.details.issues[0].path, path0)
}

const port = Effect.map(HttpServer.HttpServer, (server) => (server.address as HttpServer.TcpAddress).port)

/** Sends raw bytes on a fresh connection; resolves with everything the server wrote. */
const rawExchange = (p: number, bytes: string) =>
  Effect.async<string>((resume) => {
    const socket = connect(p, "127.0.0.1")
    let received = ""
    socket.on("data", (chunk) => (received += chunk.toString("utf8")))
    socket.on("close", () => resume(Effect.succeed(received)))
    socket.on("error", () => resume(Effect.succeed(received)))
    socket.write(bytes)
  })

/** One POST with any content type, answered as a `Reply`. */
const postRaw = (p: number, path: string, contentType: string | undefined, body: string) =>
  Effect.async<Reply>((resume) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port: p,
      method: "POST",
      path,
      headers: contentType === undefined ? {} : { "content-type": contentType }
    }, (res) => {
      let text = ""
      res.on("data", (c) => (text += c))
      res.on("end", () =>
        resume(
          Effect.succeed({
            status: res.statusCode ?? 0,
            headers: res.headers as Record<string, string>,
            body: JSON.parse(text),
            text
          })
        ))
    })
    req.on("error", (e) => resume(Effect.die(e)))
    req.end(body)
  })

/** A chunked upload of `total` bytes in 16 KiB chunks, as fast as the socket takes them. */
const chunkedUpload = (p: number, total: number) =>
  Effect.async<{ status: number; body: any } | { error: string }>((resume) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port: p,
      method: "POST",
      path: "/v1/auth/login",
      headers: { "content-type": "application/json", "transfer-encoding": "chunked" }
    }, (res) => {
      let text = ""
      res.on("data", (c) => (text += c))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body: JSON.parse(text) })))
    })
    req.on("error", (e) => resume(Effect.succeed({ error: String(e) })))
    const chunk = "x".repeat(16 * 1024)
    let sent = 0
    req.write("{\"email\":\"")
    const pump = () => {
      while (sent < total) {
        sent += chunk.length
        if (!req.write(chunk)) return req.once("drain", pump)
      }
      req.end("\"}")
    }
    pump()
  })

describe("hostile input", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("answers 422 for JSON nested 10 000 deep, as the body or in a member, with or without a credential", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { scopes: ["channels.manage", "messages.send"] })
        const cases: ReadonlyArray<readonly [string, string, string?]> = [
          ["/v1/auth/login", nested(10_000)],
          ["/v1/auth/login", `{"email":${nested(10_000)},"password":"${SECRET}"}`],
          ["/v1/auth/register", `{"email":"a@b.co","password":"${SECRET}","name":${nested(10_000, "{}")}}`],
          ["/v1/channels", `{"provider":"qr","name":${nested(10_000)}}`, key.secret],
          ["/v1/messages", `{"to":"+4915112345678","text":${nested(10_000, "{\"body\":\"x\"}")}}`, key.secret]
        ]
        for (const [path, rawBody, token] of cases) {
          // raw: bodies nested past 64, sent as text
          const reply = yield* request("POST", path, { rawBody, ...(token ? { token } : {}) })
          assertEnvelope(reply, 422, "VALIDATION_ERROR", ["body"])
          assert.match(envelopeOf(reply).details.issues[0].message, /deeper than 64/)
        }
      }))

    it.effect("decodes a body nested exactly 64 deep as usual (the member is refused by its schema)", () =>
      Effect.gen(function*() {
        // raw: a body nested 64 deep, sent as text; the answer is searched whole
        const reply = yield* request("POST", "/v1/auth/login", {
          rawBody: `{"email":${nested(63)},"password":"${SECRET}"}`
        })
        assertEnvelope(reply, 422, "VALIDATION_ERROR", ["email"])
      }))

    it.effect("refuses U+0000 in any string with 422 naming the member, never the value", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { scopes: ["channels.manage", "messages.send"] })
        // raw: U+0000 in strings, each answer searched whole for the value
        const login = yield* request("POST", "/v1/auth/login", {
          body: { email: `a\u0000${SECRET}@b.co`, password: "x" }
        })
        assertEnvelope(login, 422, "VALIDATION_ERROR", ["email"])
        assert.match(envelopeOf(login).details.issues[0].message, /U\+0000/)
        // raw: U+0000 in a string, the answer searched whole
        const register = yield* request("POST", "/v1/auth/register", {
          body: { email: "nul@example.com", password: "a long password", name: `x\u0000`, workspace_name: "w" }
        })
        assertEnvelope(register, 422, "VALIDATION_ERROR", ["name"])
        // raw: U+0000 in a string, the answer searched whole
        const channel = yield* request("POST", "/v1/channels", {
          token: key.secret,
          body: { provider: "qr", name: `Support\u0000${SECRET}` }
        })
        assertEnvelope(channel, 422, "VALIDATION_ERROR", ["name"])
        // raw: U+0000 in a string, the answer searched whole
        const message = yield* request("POST", "/v1/messages", {
          token: key.secret,
          body: { to: "+4915112345678", text: { body: `hi\u0000${SECRET}` } }
        })
        assertEnvelope(message, 422, "VALIDATION_ERROR", ["text", "body"])
        // raw: U+0000 in a member name, sent as text
        const memberName = yield* request("POST", "/v1/auth/login", {
          rawBody: `{"email":"a@b.co","password":"x","${SECRET}\\u0000":1}`
        })
        assertEnvelope(memberName, 422, "VALIDATION_ERROR", [])
        // raw: U+0000 in a query value
        const query = yield* request("GET", `/v1/messages?to=%2B49%00${SECRET}`, { token: key.secret })
        assertEnvelope(query, 422, "VALIDATION_ERROR", ["to"])
      }))

    it.effect("never accepts a sandbox inbound message it would then drop", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        // raw: U+0000 in a string, the answer searched whole
        const reply = yield* request("POST", `/v1/sandbox/sessions/${session.id}/inbound`, {
          token: key,
          body: { from: "+4915112345678", text: { body: `hi\u0000there` } }
        })
        assertEnvelope(reply, 422, "VALIDATION_ERROR", ["text", "body"])
        // raw: an escaped \u0000 written out, beside the hostile case above
        const accepted = yield* request("POST", `/v1/sandbox/sessions/${session.id}/inbound`, {
          token: key,
          body: { from: "+4915112345678", text: { body: "a \\u0000 written out is fine" } }
        })
        assert.strictEqual(accepted.status, 202)
      }))

    it.effect("answers a chunked body over the limit with 413 in the envelope, not a reset", () =>
      Effect.gen(function*() {
        const reply = yield* chunkedUpload(yield* port, 2 * 1024 * 1024)
        assert.notProperty(reply, "error", JSON.stringify(reply))
        const ok = reply as { status: number; body: any }
        assert.strictEqual(ok.status, 413)
        assert.strictEqual(ok.body.error.code, "PAYLOAD_TOO_LARGE")
        assert.strictEqual(ok.body.error.details.limit_bytes, 1024 * 1024)
        // a chunked body under the limit is read as usual
        const small = yield* chunkedUpload(yield* port, 64 * 1024)
        assert.strictEqual((small as { status: number }).status, 422)
        assert.deepStrictEqual((small as { body: any }).body.error.details.issues[0].path, ["email"])
      }))

    it.effect("refuses form-encoded and other non-JSON bodies with 422, echoing nothing", () =>
      Effect.gen(function*() {
        const p = yield* port
        for (
          // undefined: a JSON body sent without Content-Type is no exception
          const contentType of [
            "application/x-www-form-urlencoded",
            "text/plain",
            "multipart/form-data; boundary=x",
            undefined
          ]
        ) {
          const reply = yield* postRaw(
            p,
            "/v1/auth/login",
            contentType,
            `{"email":"a@b.co","password":"${SECRET}"}`
          )
          assertEnvelope(reply, 422, "VALIDATION_ERROR", ["content-type"])
          const body = (reply as { body: any }).body
          assert.strictEqual(body.error.details.reason, "content_type")
          assert.include(body.error.message, "Content-Type: application/json")
        }
        // raw: Content-Type with a charset, sent as text
        const json = yield* request("POST", "/v1/auth/login", {
          headers: { "content-type": "application/json; charset=utf-8" },
          rawBody: `{"email":"nobody@example.com","password":"${SECRET}"}`
        })
        assert.strictEqual(json.status, 401)
      }))

    it.effect("answers a 409 on a taken channel name without echoing the name", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        yield* Effect.flatMap(Operator.Operator, (o) => o.setPlan(user.workspaceId, "growth")).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const key = (yield* createKey(user, { scopes: ["channels.manage"] })).secret
        // raw: every answer of this test is searched whole for the channel name
        const first = yield* request("POST", "/v1/channels", { token: key, body: { provider: "qr", name: SECRET } })
        assert.strictEqual(first.status, 201)
        // raw: the 409's answer is searched whole for the name
        const second = yield* request("POST", "/v1/channels", { token: key, body: { provider: "qr", name: SECRET } })
        assertEnvelope(second, 409, "CONFLICT")
        // raw: as the calls around it (answers searched whole)
        const other = yield* request("POST", "/v1/channels", { token: key, body: { provider: "qr", name: "other" } })
        assert.strictEqual(other.status, 201)
        // raw: the 409's answer is searched whole for the name
        const rename = yield* request(
          "PATCH",
          `/v1/channels/${bodyOf(Schema.Struct({ id: Schema.String }), other).id}`,
          { token: key, body: { name: SECRET } }
        )
        assertEnvelope(rename, 409, "CONFLICT")
      }))

    it.effect("answers requests Node's parser refuses in the envelope", () =>
      Effect.gen(function*() {
        const p = yield* port
        for (
          const raw of [
            "FROB /health HTTP/1.1\r\nHost: x\r\n\r\n",
            "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "GET /he\u0001alth HTTP/1.1\r\nHost: x\r\n\r\n"
          ]
        ) {
          const response = yield* rawExchange(p, raw)
          assert.match(response, /^HTTP\/1\.1 400 /, raw)
          const body = JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4))
          assert.strictEqual(body.error.code, "BAD_REQUEST")
          assert.deepStrictEqual(body.error.details, {})
        }
      }))

    it.effect("answers a request without Host, an unknown Expect and CONNECT in the envelope, then closes", () =>
      Effect.gen(function*() {
        const p = yield* port
        const cases = [
          ["GET /health HTTP/1.1\r\n\r\n", 400, "BAD_REQUEST"],
          [
            "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}",
            417,
            "EXPECTATION_FAILED"
          ],
          ["CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 400, "BAD_REQUEST"]
        ] as const
        for (const [raw, status, code] of cases) {
          // the exchange ends when the server closes the connection
          const response = yield* rawExchange(p, raw)
          assert.match(response, new RegExp(`^HTTP/1\\.1 ${status} `), JSON.stringify(raw))
          assert.match(response, /\r\ncontent-type: application\/json\r\n/i, JSON.stringify(raw))
          assert.match(response, /\r\nconnection: close\r\n/i, JSON.stringify(raw))
          const body = JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4))
          assert.deepStrictEqual(Object.keys(body), ["error"])
          assert.strictEqual(body.error.code, code, JSON.stringify(raw))
          assert.deepStrictEqual(body.error.details, {})
        }
        // HTTP/1.0 needs no Host; 100-continue is met as usual
        const old = yield* rawExchange(p, "GET /health HTTP/1.0\r\n\r\n")
        assert.match(old, /^HTTP\/1\.1 200 /)
        // raw: the server still answers after the hostile exchanges above (a file raw by design)
        const reply = yield* request("GET", "/health")
        assert.strictEqual(reply.status, 200)
      }))
  })
})
