/**
 * `POST /v1/media` (docs/API.md "Media"): the raw body streamed into storage, the kind's limit enforced
 * while it streams (413 with `details.limit_bytes`), the type checked from the bytes (422), an
 * `Idempotency-Key` replayed, and hostile uploads (wrong type, oversized, truncated, slow) leave
 * nothing stored. The bytes come back byte-identical from `GET /v1/media/{id}/content`.
 */
import { HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Media } from "@switchboard/domain"
import { Duration, Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { connect } from "node:net"
import { api, bodyOf, createKey, envelopeOf, eventually, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const png = (size: number) => {
  const bytes = randomBytes(size)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  return bytes
}
const webp = (size: number) => {
  const bytes = randomBytes(size)
  Buffer.from("RIFF").copy(bytes)
  Buffer.from("WEBP").copy(bytes, 8)
  return bytes
}
const EXE = Buffer.concat([Buffer.from("MZ"), randomBytes(2000)])

/** Uploads `bytes` (one body, `Content-Length` set) and answers status, headers and JSON. */
const upload = (
  token: string,
  bytes: Uint8Array,
  options: { readonly contentType?: string; readonly query?: string; readonly headers?: Record<string, string> } = {}
) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    let req = HttpClientRequest.post(`/v1/media${options.query ?? ""}`).pipe(
      HttpClientRequest.setHeader("authorization", `Bearer ${token}`),
      HttpClientRequest.bodyUint8Array(bytes, options.contentType)
    )
    for (const [k, v] of Object.entries(options.headers ?? {})) req = HttpClientRequest.setHeader(req, k, v)
    const response = yield* client.execute(req)
    const text = yield* response.text
    return {
      status: response.status,
      headers: response.headers as Record<string, string>,
      body: text === "" ? undefined : JSON.parse(text),
      text
    }
  }).pipe(Effect.scoped, Effect.orDie)

const port = Effect.map(HttpServer.HttpServer, (server) => (server.address as HttpServer.TcpAddress).port)

/** Writes `head` then `body` on a raw connection; answers what the server wrote once it closes (or `stopAfterMs`). */
const raw = (p: number, head: string, body: Uint8Array, options: { readonly destroy?: boolean } = {}) =>
  Effect.async<string>((resume) => {
    const socket = connect(p, "127.0.0.1")
    let received = ""
    socket.on("data", (chunk) => (received += chunk.toString("utf8")))
    socket.on("close", () => resume(Effect.succeed(received)))
    socket.on("error", () => {})
    socket.write(head)
    socket.write(body, () => {
      if (options.destroy) setTimeout(() => socket.destroy(), 100)
    })
  })

const statusOf = (reply: string) => Number(reply.slice(9, 12))
const envelopeIn = (reply: string) => JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4)).error

/** Media rows of a workspace: what a refused upload must not leave behind. */
const mediaCount = (workspaceId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ n: number | string }>`SELECT count(*) AS n FROM media WHERE workspace_id = ${workspaceId}`,
      (rows) => Number(rows[0]!.n)
    )).pipe(Effect.orDie)

const chunkCount = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ n: number | string }>`SELECT count(*) AS n FROM media_chunks c LEFT JOIN media m ON m.id = c.media_id
      WHERE m.id IS NULL OR m.status <> 'ready'`,
    (rows) => Number(rows[0]!.n)
  )).pipe(Effect.orDie)

const setup = Effect.gen(function*() {
  const user = yield* signUp()
  const key = yield* createKey(user, { mode: "test" })
  return { user, token: key.secret, workspaceId: user.workspaceId }
})

describe("media uploads", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("stores an image streamed as the raw body and serves it back byte-identical", () =>
      Effect.gen(function*() {
        const { token } = yield* setup
        const bytes = png(700 * 1024)
        const reply = yield* upload(token, bytes, { contentType: "image/png", query: "?filename=photo.png" })
        assert.strictEqual(reply.status, 201, reply.text)
        const media = bodyOf(Media.Media, reply)
        assert.match(media.id, /^med_/)
        assert.strictEqual(media.kind, "image")
        assert.strictEqual(media.mime_type, "image/png")
        assert.strictEqual(media.status, "ready")
        assert.strictEqual(media.size_bytes, bytes.byteLength)
        assert.strictEqual(media.sha256, createHash("sha256").update(bytes).digest("hex"))
        assert.strictEqual(media.filename, "photo.png")
        const client = yield* api(token)
        assert.deepStrictEqual(yield* client.media.get({ path: { mediaId: media.id } }), media)
        // raw: the test reads the Content-Type header, which the typed client does not show
        const content = yield* request("GET", `/v1/media/${media.id}/content`, { token })
        assert.strictEqual(content.status, 200)
        assert.strictEqual(content.headers["content-type"], "image/png")
        const back = yield* Effect.flatMap(
          HttpClient.HttpClient,
          (c) =>
            c.get(`/v1/media/${media.id}/content`, { headers: { authorization: `Bearer ${token}` } }).pipe(
              Effect.flatMap((r) => r.arrayBuffer),
              Effect.scoped
            )
        )
        assert.isTrue(Buffer.from(back).equals(bytes))
      }))

    it.effect("reads the type from the bytes when none is declared, and takes any file as a document", () =>
      Effect.gen(function*() {
        const { token } = yield* setup
        const sniffed = yield* upload(token, webp(2048))
        assert.strictEqual(sniffed.status, 201, sniffed.text)
        assert.include(sniffed.body, { kind: "image", mime_type: "image/webp" })
        const sticker = yield* upload(token, webp(2048), { contentType: "image/webp", query: "?kind=sticker" })
        assert.include(sticker.body, { kind: "sticker", mime_type: "image/webp" })
        const pdf = yield* upload(token, Buffer.from("%PDF-1.7\n% a small document\n"), {
          contentType: "application/pdf",
          query: "?filename=Invoice%20%C3%A9.pdf"
        })
        assert.strictEqual(pdf.status, 201, pdf.text)
        assert.include(pdf.body, { kind: "document", mime_type: "application/pdf", filename: "Invoice é.pdf" })
        const unknown = yield* upload(token, EXE)
        assert.include(unknown.body, { kind: "document", mime_type: "application/octet-stream" })
      }))

    it.effect("refuses bytes that are not the declared type, and a type the kind does not take, with nothing stored", () =>
      Effect.gen(function*() {
        const { token, workspaceId } = yield* setup
        const disguised = yield* upload(token, EXE, { contentType: "image/jpeg" })
        assert.strictEqual(disguised.status, 422)
        const refusal = envelopeOf(disguised)
        assert.strictEqual(refusal.code, "VALIDATION_ERROR")
        assert.strictEqual(refusal.details["reason"], "media_type_unsupported")
        const pngSticker = yield* upload(token, png(1024), { contentType: "image/png", query: "?kind=sticker" })
        assert.strictEqual(pngSticker.status, 422)
        assert.strictEqual(envelopeOf(pngSticker).details["reason"], "media_type_unsupported")
        const gif = yield* upload(token, Buffer.from("GIF89a........"), {
          contentType: "image/gif",
          query: "?kind=image"
        })
        assert.strictEqual(gif.status, 422)
        const empty = yield* upload(token, new Uint8Array(0), { contentType: "image/png" })
        assert.strictEqual(empty.status, 422)
        const badKind = yield* upload(token, png(100), { contentType: "image/png", query: "?kind=gif" })
        assert.strictEqual(badKind.status, 422)
        assert.strictEqual(yield* mediaCount(workspaceId), 0)
      }))

    it.effect("answers 413 with the kind's limit as soon as Content-Length announces more, without reading the body", () =>
      Effect.gen(function*() {
        const { token, workspaceId } = yield* setup
        // headers only: the answer comes before a byte of the announced 6 MiB is sent
        const reply = yield* raw(
          yield* port,
          `POST /v1/media HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: image/jpeg\r\nContent-Length: ${
            6 * 1024 * 1024
          }\r\n\r\n`,
          new Uint8Array(0)
        ).pipe(Effect.timeout("20 seconds"))
        assert.strictEqual(statusOf(reply), 413)
        const error = envelopeIn(reply)
        assert.strictEqual(error.code, "PAYLOAD_TOO_LARGE")
        assert.strictEqual(error.details.limit_bytes, 5 * 1024 * 1024)
        assert.strictEqual(yield* mediaCount(workspaceId), 0)
      }))

    it.effect("answers 413 once a chunked body crosses the kind's limit, keeping none of it", () =>
      Effect.gen(function*() {
        const { token, workspaceId } = yield* setup
        const before = yield* chunkCount
        const body = webp(600 * 1024)
        const pieces: Array<Buffer> = []
        for (let at = 0; at < body.byteLength; at += 64 * 1024) {
          const piece = body.subarray(at, at + 64 * 1024)
          pieces.push(Buffer.from(`${piece.byteLength.toString(16)}\r\n`), piece, Buffer.from("\r\n"))
        }
        pieces.push(Buffer.from("0\r\n\r\n"))
        const reply = yield* raw(
          yield* port,
          `POST /v1/media?kind=sticker HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: image/webp\r\nTransfer-Encoding: chunked\r\n\r\n`,
          Buffer.concat(pieces)
        )
        assert.strictEqual(statusOf(reply), 413)
        assert.strictEqual(envelopeIn(reply).details.limit_bytes, 500 * 1024)
        assert.strictEqual(yield* mediaCount(workspaceId), 0)
        assert.strictEqual(yield* chunkCount, before)
      }))

    it.effect("keeps nothing of an upload cut off before its announced length", () =>
      Effect.gen(function*() {
        const { token, workspaceId } = yield* setup
        const body = png(400 * 1024)
        yield* raw(
          yield* port,
          `POST /v1/media HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: image/png\r\nContent-Length: ${
            body.byteLength + 1000
          }\r\n\r\n`,
          body,
          { destroy: true }
        )
        const left = yield* eventually(mediaCount(workspaceId), (n) => n === 0)
        assert.strictEqual(left, 0)
      }))

    it.effect("replays an upload for a repeated Idempotency-Key, and refuses the key for another file", () =>
      Effect.gen(function*() {
        const { token, workspaceId } = yield* setup
        const bytes = png(4096)
        const first = yield* upload(token, bytes, { contentType: "image/png", headers: { "idempotency-key": "pic-1" } })
        assert.strictEqual(first.status, 201)
        const again = yield* upload(token, bytes, { contentType: "image/png", headers: { "idempotency-key": "pic-1" } })
        assert.strictEqual(again.status, 201)
        assert.strictEqual(again.headers["idempotent-replay"], "true")
        assert.deepStrictEqual(again.body, first.body)
        const other = yield* upload(token, png(100), {
          contentType: "image/png",
          headers: { "idempotency-key": "pic-1" }
        })
        assert.strictEqual(other.status, 409)
        assert.strictEqual(envelopeOf(other).code, "IDEMPOTENCY_CONFLICT")
        assert.strictEqual(yield* mediaCount(workspaceId), 1)
      }))

    it.effect("keeps the JSON-only rule and the 1 MiB limit on every other route", () =>
      Effect.gen(function*() {
        const { token } = yield* setup
        // raw: a body that is not JSON and one over 1 MiB are sent on purpose
        const reply = yield* request("POST", "/v1/messages", {
          token,
          headers: { "content-type": "image/png" },
          rawBody: "{}"
        })
        assert.strictEqual(reply.status, 422)
        // raw: a body over 1 MiB that is not an object, sent on purpose
        const big = yield* request("POST", "/v1/contacts", { token, rawBody: `"${"x".repeat(1100 * 1024)}"` })
        assert.strictEqual(big.status, 413)
      }))

    it.effect("needs the messages.send scope", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { scopes: ["messages.read"] })
        const reply = yield* upload(key.secret, png(100), { contentType: "image/png" })
        assert.strictEqual(reply.status, 403)
        assert.strictEqual(yield* mediaCount(user.workspaceId), 0)
      }))
  })
})

describe("media uploads from slow clients", () => {
  layer(
    TestApp.layer({ headersTimeout: Duration.millis(800), requestTimeout: Duration.millis(1500) }),
    { excludeTestServices: true, timeout: 120_000 }
  )((it) => {
    it.effect("cuts off an upload that stalls mid-body (408) and keeps nothing of it", () =>
      Effect.gen(function*() {
        const { token, workspaceId } = yield* setup
        const reply = yield* raw(
          yield* port,
          `POST /v1/media HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: image/png\r\nContent-Length: 500000\r\n\r\n`,
          png(300 * 1024)
        ).pipe(Effect.timeout("20 seconds"))
        assert.strictEqual(statusOf(reply), 408)
        assert.strictEqual(envelopeIn(reply).code, "REQUEST_TIMEOUT")
        const left = yield* eventually(mediaCount(workspaceId), (n) => n === 0)
        assert.strictEqual(left, 0)
        // the server still serves
        assert.strictEqual((yield* (yield* api()).health.health()).status, "ok")
      }))
  })
})
