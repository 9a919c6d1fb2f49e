/**
 * `POST /v1/media` as people upload (docs/API.md "Media"): a `multipart/form-data` form with a `file`
 * part (what `curl -F` and Meta's media API send), a declared type checked against the bytes
 * (naming the expected and the sniffed kinds), text that is not a media type refused, a
 * `Content-Encoding` refused (415, the same answer on every JSON route), `PUT /v1/media` 405, and an oversized body answered with a
 * 413 that Node's `fetch` and `http.request` both read, twenty times in a row each.
 */
import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { request as httpRequest } from "node:http"
import { connect } from "node:net"
import { gzipSync } from "node:zlib"
import { createKey, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const signedUp = Effect.gen(function*() {
  const user = yield* signUp()
  const key = yield* createKey(user, { mode: "test" })
  return { token: key.secret }
})

const png = (size: number) => {
  const bytes = randomBytes(size)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  return bytes
}

const port = Effect.map(HttpServer.HttpServer, (server) => (server.address as HttpServer.TcpAddress).port)

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

/** Node's own `fetch` (undici) against the test server. */
const fetchApi = (path: string, init: RequestInit & { readonly token: string }) =>
  Effect.flatMap(port, (p) =>
    Effect.promise(async (): Promise<Answer> => {
      const response = await fetch(`http://127.0.0.1:${p}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${init.token}`, ...(init.headers as Record<string, string> | undefined) }
      })
      const text = await response.text()
      return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
    }))

/** A form with one `file` part of its own type and name. */
const form = (bytes: Uint8Array, type: string, filename: string) => {
  const data = new FormData()
  data.append("file", new Blob([bytes], { type }), filename)
  return data
}

/** `http.request` writing `body` in 64 KiB writes, as a client that reads only after writing does. */
const nodeRequest = (p: number, token: string, body: Buffer) =>
  Effect.async<{ readonly status: number; readonly code: string }>((resume) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port: p,
      method: "POST",
      path: "/v1/media",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "image/png",
        "content-length": String(body.byteLength)
      }
    })
    req.on("response", (response) => {
      let text = ""
      response.on("data", (chunk) => (text += chunk))
      response.on(
        "end",
        () => resume(Effect.succeed({ status: response.statusCode!, code: JSON.parse(text).error.code }))
      )
    })
    req.on("error", (error) => resume(Effect.succeed({ status: 0, code: String(error) })))
    let offset = 0
    const write = () => {
      while (offset < body.byteLength) {
        const piece = body.subarray(offset, offset + 65_536)
        offset += piece.byteLength
        if (!req.write(piece)) return void req.once("drain", write)
      }
      req.end()
    }
    write()
  })

/**
 * A client that reads only after writing its whole body: a raw connection, paused while it writes
 * `body` in 64 KiB pieces (a turn of the event loop between them), then read to its end. A
 * server that closed while the body was still coming has reset the connection by then, and what
 * it answered is lost.
 */
const writeThenRead = (p: number, head: string, body: Buffer) =>
  Effect.async<string>((resume) => {
    const socket = connect(p, "127.0.0.1")
    let received = ""
    socket.pause()
    socket.on("data", (chunk) => (received += chunk.toString("latin1")))
    socket.on("close", () => resume(Effect.succeed(received)))
    socket.on("error", () => {})
    socket.write(head)
    let offset = 0
    const next = () => {
      if (offset >= body.byteLength || socket.destroyed) return socket.resume()
      const piece = body.subarray(offset, offset + 65_536)
      offset += piece.byteLength
      socket.write(piece, () => setTimeout(next, 1))
    }
    next()
  })

describe("media uploads as people make them", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.effect("stores the file part of a multipart form with its own type and name, byte-identical", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const bytes = png(300 * 1024)
        const reply = yield* fetchApi("/v1/media", {
          method: "POST",
          token,
          body: form(bytes, "image/png", "menu.png")
        })
        assert.strictEqual(reply.status, 201, JSON.stringify(reply.body))
        assert.strictEqual(reply.body.kind, "image")
        assert.strictEqual(reply.body.mime_type, "image/png")
        assert.strictEqual(reply.body.filename, "menu.png")
        assert.strictEqual(reply.body.size_bytes, bytes.byteLength)
        assert.strictEqual(reply.body.sha256, createHash("sha256").update(bytes).digest("hex"))
        const back = yield* Effect.flatMap(
          port,
          (p) =>
            Effect.promise(() =>
              fetch(`http://127.0.0.1:${p}/v1/media/${reply.body.id}/content`, {
                headers: { authorization: `Bearer ${token}` }
              }).then((r) => r.arrayBuffer())
            )
        )
        assert.isTrue(Buffer.from(back).equals(bytes))
      }))

    it.effect("answers a form whose image part is over the image limit with 413", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const reply = yield* fetchApi("/v1/media", {
          method: "POST",
          token,
          body: form(png(6 * 1024 * 1024), "image/png", "big.png")
        })
        assert.strictEqual(reply.status, 413)
        assert.strictEqual(reply.body.error.details.limit_bytes, 5 * 1024 * 1024)
      }))

    it.effect("refuses a part whose declared type is not what its bytes are, naming both kinds", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const reply = yield* fetchApi("/v1/media", {
          method: "POST",
          token,
          body: form(png(2_000), "application/json", "data.json")
        })
        assert.strictEqual(reply.status, 422)
        assert.strictEqual(reply.body.error.details.reason, "media_type_unsupported")
        assert.strictEqual(reply.body.error.details.expected_kind, "document")
        assert.strictEqual(reply.body.error.details.sniffed_kind, "image")
        assert.strictEqual(reply.body.error.details.sniffed_type, "image/png")
        assert.deepStrictEqual(reply.body.error.details.issues[0].path, ["file", "content-type"])
      }))

    it.effect("refuses a PNG declared as another image type (image/gif), raw or as a part, naming both kinds", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const raw = yield* fetchApi("/v1/media?filename=cat.gif", {
          method: "POST",
          token,
          body: png(2_000),
          headers: { "content-type": "image/gif" }
        })
        const part = yield* fetchApi("/v1/media", {
          method: "POST",
          token,
          body: form(png(2_000), "image/gif", "cat.gif")
        })
        for (const reply of [raw, part]) {
          assert.strictEqual(reply.status, 422, JSON.stringify(reply.body))
          assert.deepInclude(reply.body.error.details, {
            reason: "media_type_unsupported",
            expected_kind: "document",
            sniffed_kind: "image",
            sniffed_type: "image/png"
          })
          assert.include(reply.body.error.message, "declare image/png")
        }
        // a real GIF declared so is still a document of its type
        const gif = Buffer.concat([Buffer.from("GIF89a"), randomBytes(500)])
        const taken = yield* fetchApi("/v1/media?filename=cat.gif", {
          method: "POST",
          token,
          body: gif,
          headers: { "content-type": "image/gif" }
        })
        assert.strictEqual(taken.status, 201, JSON.stringify(taken.body))
        assert.deepInclude(taken.body, { kind: "document", mime_type: "image/gif" })
      }))

    it.effect("refuses multipart framing sent as a raw body, and a form without a file part", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const framed = Buffer.from(
          "--abc123\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello\r\n--abc123--\r\n"
        )
        const raw = yield* fetchApi("/v1/media", {
          method: "POST",
          token,
          body: framed,
          headers: { "content-type": "text/plain" }
        })
        assert.strictEqual(raw.status, 422)
        assert.strictEqual(raw.body.error.details.sniffed_type, "multipart/form-data")
        const fields = new FormData()
        fields.append("note", "no file here")
        const empty = yield* fetchApi("/v1/media", { method: "POST", token, body: fields })
        assert.strictEqual(empty.status, 422)
        assert.strictEqual(empty.body.error.details.reason, "multipart_part_unknown")
        assert.notInclude(JSON.stringify(empty.body), "no file here")
      }))

    it.effect("refuses a part whose file name holds U+0000 or passes 255 characters, as ?filename= is refused", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const framed = (filename: string) =>
          Buffer.concat([
            Buffer.from(
              `--b0\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
                "Content-Type: image/png\r\n\r\n"
            ),
            png(2_000),
            Buffer.from("\r\n--b0--\r\n")
          ])
        const upload = (filename: string) =>
          fetchApi("/v1/media", {
            method: "POST",
            token,
            body: framed(filename),
            headers: { "content-type": "multipart/form-data; boundary=b0" }
          })
        const nul = yield* upload("menu\u0000MARKER.png")
        assert.strictEqual(nul.status, 422, JSON.stringify(nul.body))
        assert.deepStrictEqual(nul.body.error.details.issues, [{
          path: ["file", "filename"],
          message: "Must not contain the character U+0000"
        }])
        const long = yield* upload(`${"MARKER".repeat(50)}.png`)
        assert.strictEqual(long.status, 422, JSON.stringify(long.body))
        assert.deepStrictEqual(long.body.error.details.issues[0].path, ["file", "filename"])
        for (const answer of [nul, long]) assert.notInclude(JSON.stringify(answer.body), "MARKER")
        // 255 characters (an emoji is one) are kept
        const longest = `${"\u{1F600}".repeat(251)}.png`
        const kept = yield* upload(longest)
        assert.strictEqual(kept.status, 201, JSON.stringify(kept.body))
        assert.strictEqual(kept.body.filename, longest)
      }))

    it.effect("refuses a part after the file, and a second file, as it refuses one before it", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const after = new FormData()
        after.append("file", new Blob([png(300)], { type: "image/png" }), "a.png")
        after.append("extra", "the note after the file")
        const twice = new FormData()
        twice.append("file", new Blob([png(300)], { type: "image/png" }), "a.png")
        twice.append("file", new Blob([png(200)], { type: "image/png" }), "b.png")
        for (const [name, body] of [["a field after the file", after], ["a second file", twice]] as const) {
          const reply = yield* fetchApi("/v1/media", { method: "POST", token, body })
          assert.strictEqual(reply.status, 422, `${name}: ${JSON.stringify(reply.body)}`)
          assert.strictEqual(reply.body.error.details.reason, "multipart_part_unknown", name)
          assert.notInclude(JSON.stringify(reply.body), "the note after the file")
        }
        // the same file alone is taken
        const alone = new FormData()
        alone.append("file", new Blob([png(300)], { type: "image/png" }), "a.png")
        assert.strictEqual((yield* fetchApi("/v1/media", { method: "POST", token, body: alone })).status, 201)
      }))

    it.effect("refuses declared types that are not type/subtype, without repeating them", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        for (
          const type of [
            "*/*",
            "image/",
            "image/p\u00c3\u00b1g",
            "image/*",
            "nothing",
            // parameters the lenient reader dropped (the file was stored as image/png)
            "image/png; charset",
            "image/png; =utf-8",
            "image/png; a=b c",
            "image/png; name=\"unclosed",
            "image/png; a=1; A=2"
          ]
        ) {
          const reply = yield* fetchApi("/v1/media?kind=document", {
            method: "POST",
            token,
            body: png(100),
            headers: { "content-type": type }
          })
          assert.strictEqual(reply.status, 422, type)
          assert.strictEqual(reply.body.error.details.reason, "media_type_invalid", type)
          assert.deepStrictEqual(reply.body.error.details.issues[0].path, ["content-type"])
          assert.notInclude(JSON.stringify(reply.body), "unclosed")
        }
        // empty parameters are RFC 9110's (`;` with nothing after it), and are taken
        const empty = yield* fetchApi("/v1/media", {
          method: "POST",
          token,
          body: png(100),
          headers: { "content-type": "image/png;" }
        })
        assert.strictEqual(empty.status, 201, JSON.stringify(empty.body))
        assert.strictEqual(empty.body.mime_type, "image/png")
      }))

    it.effect("refuses a compressed body with 415 rather than storing it compressed", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const reply = yield* fetchApi("/v1/media", {
          method: "POST",
          token,
          body: png(2_000),
          headers: { "content-type": "image/png", "content-encoding": "gzip" }
        })
        assert.strictEqual(reply.status, 415)
        assert.strictEqual(reply.body.error.code, "UNSUPPORTED_MEDIA_TYPE")
        assert.strictEqual(reply.body.error.details.reason, "content_encoding")
      }))

    it.effect("answers a compressed JSON body with the same 415 on every route, signed in or not", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const json = gzipSync(JSON.stringify({ to: "+4915112345678", text: { body: "hi" } }))
        const routes = [
          ["POST", "/v1/messages", token],
          ["POST", "/v1/contacts", token],
          ["PATCH", "/v1/contacts/cnt_01JD7X6F3Q9T2M5N8R4V0W1Y2Z", token],
          ["POST", "/v1/auth/login", ""]
        ] as const
        for (const [method, path, auth] of routes) {
          for (const encoding of ["gzip", "br", "GZIP, identity"]) {
            const reply = yield* fetchApi(path, {
              method,
              token: auth,
              body: json,
              headers: { "content-type": "application/json", "content-encoding": encoding }
            })
            assert.strictEqual(reply.status, 415, `${method} ${path} ${encoding}: ${JSON.stringify(reply.body)}`)
            assert.strictEqual(reply.headers.get("connection"), "close")
            assert.deepInclude(reply.body.error, { code: "UNSUPPORTED_MEDIA_TYPE" })
            assert.strictEqual(reply.body.error.details.reason, "content_encoding")
            assert.deepStrictEqual(reply.body.error.details.issues[0].path, ["content-encoding"])
          }
        }
        // `identity` is no encoding: the body is read as sent
        const plain = yield* fetchApi("/v1/contacts", {
          method: "POST",
          token,
          body: JSON.stringify({ phone_number: "+4915112345670" }),
          headers: { "content-type": "application/json", "content-encoding": "identity" }
        })
        assert.strictEqual(plain.status, 201, JSON.stringify(plain.body))
      }))

    it.effect("answers PUT /v1/media with 405 and the methods the path takes", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const reply = yield* fetchApi("/v1/media", {
          method: "PUT",
          token,
          body: png(2_000_000),
          headers: { "content-type": "image/png" }
        })
        assert.strictEqual(reply.status, 405)
        assert.strictEqual(reply.body.error.code, "METHOD_NOT_ALLOWED")
        assert.strictEqual(reply.headers.get("allow"), "POST")
      }))

    it.effect("answers an oversized image with a 413 Node's fetch reads, 20 times in a row, announced or streamed", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const bytes = png(7 * 1024 * 1024)
        const statuses: Array<string> = []
        for (let i = 0; i < 20; i++) {
          for (const streamed of [false, true]) {
            const body = streamed
              ? new ReadableStream<Uint8Array>({
                start(controller) {
                  for (let at = 0; at < bytes.byteLength; at += 256 * 1024) {
                    controller.enqueue(bytes.subarray(at, at + 256 * 1024))
                  }
                  controller.close()
                }
              })
              : bytes
            const reply = yield* fetchApi(
              "/v1/media",
              {
                method: "POST",
                token,
                body,
                headers: { "content-type": "image/png" },
                ...(streamed ? { duplex: "half" } : {})
              } as RequestInit & { readonly token: string }
            ).pipe(
              Effect.map((r) => `${r.status}`),
              Effect.catchAllDefect((e) => Effect.succeed(String((e as Error).cause ?? e)))
            )
            statuses.push(`${streamed ? "streamed" : "announced"} ${reply}`)
          }
        }
        assert.deepStrictEqual(statuses, Array(20).fill(["announced 413", "streamed 413"]).flat())
      }))

    it.effect("answers an oversized image with a 413 a client reads after writing its whole body", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const p = yield* port
        const bytes = png(8 * 1024 * 1024)
        const head = `POST /v1/media HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
          `Content-Type: image/png\r\nContent-Length: ${bytes.byteLength}\r\n\r\n`
        const reply = yield* writeThenRead(p, head, bytes)
        assert.strictEqual(reply.slice(0, 12), "HTTP/1.1 413")
        assert.include(reply, "PAYLOAD_TOO_LARGE")
      }))

    it.effect("answers an oversized image with a 413 http.request reads, 20 times in a row", () =>
      Effect.gen(function*() {
        const { token } = yield* signedUp
        const p = yield* port
        const bytes = png(7 * 1024 * 1024)
        const answers: Array<string> = []
        for (let i = 0; i < 20; i++) {
          const reply = yield* nodeRequest(p, token, bytes)
          answers.push(`${reply.status} ${reply.code}`)
        }
        assert.deepStrictEqual(answers, Array(20).fill("413 PAYLOAD_TOO_LARGE"))
      }))
  })
})
