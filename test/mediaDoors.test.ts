/**
 * One validation for a media file, whatever the door (docs/API.md "Media"): an upload, a URL fetched
 * for a send, a sandbox inbound file and a send of a stored media as a kind all pass the same
 * check (`MediaSniff.checkFile`) and the same media type reader (`MediaType`): a voice note's
 * `audio/ogg; codecs=opus` taken at every door with parameters, upper case and spaces, stored
 * canonical and served with its type, inline; an empty file, bytes that are not the declared type
 * and text that is not a type refused at each; a URL that fails in any way a 422 with its reason.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { api, eventually, refused, request, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const FROM = "+4915112345678"

const withHead = (head: Buffer, size: number) => {
  const bytes = randomBytes(size)
  head.copy(bytes)
  return bytes
}
const png = (size: number) => withHead(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), size)
const ogg = (size: number) => withHead(Buffer.from("OggS\0\x02"), size)
const EXE = withHead(Buffer.from("MZ\x90\0"), 3000)

/** The voice note's type as clients and servers write it. */
const VOICE_TYPES = ["audio/ogg; codecs=opus", "AUDIO/OGG;Codecs=opus", "  Audio/Ogg ;  codecs=\"opus\"  "]
const VOICE = "audio/ogg; codecs=opus"

/** Uploads raw bytes; answers status and JSON. */
const upload = (token: string, bytes: Uint8Array, contentType: string, query = "") =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post(`/v1/media${query}`).pipe(
        HttpClientRequest.setHeader("authorization", `Bearer ${token}`),
        HttpClientRequest.bodyUint8Array(bytes),
        HttpClientRequest.setHeader("content-type", contentType)
      )
    )
    return { status: response.status, body: (yield* response.json) as any }
  }).pipe(Effect.scoped, Effect.orDie)

/** A local file server answering each path its own way. */
const fileServer = (routes: Record<string, (res: ServerResponse) => void>) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; close: () => void }>((resume) => {
      const server = createServer((req, res) => {
        const route = routes[req.url ?? ""]
        if (route === undefined) res.writeHead(404).end()
        else route(res)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({
          url: `http://127.0.0.1:${port}`,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        }))
      })
    }),
    (s) => Effect.sync(s.close)
  )

describe("one validation for a media file, whatever the door", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("takes a voice note's type with parameters, upper case and spaces at every door", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([FROM])
        const client = yield* api(key)
        const bytes = ogg(4000)
        // upload
        for (const type of VOICE_TYPES) {
          const reply = yield* upload(key, bytes, type)
          assert.strictEqual(reply.status, 201, `${type}: ${JSON.stringify(reply.body)}`)
          assert.strictEqual(reply.body.kind, "audio")
          assert.strictEqual(reply.body.mime_type, VOICE)
          // serving it: its type with the codec, inline so a browser plays it
          const content = yield* request("GET", `/v1/media/${reply.body.id}/content`, { token: key })
          assert.strictEqual(content.headers["content-type"], VOICE)
          assert.strictEqual(content.headers["content-disposition"], "inline")
          // the send check
          const sent = yield* client.messages.send({
            payload: { to: FROM, audio: { media_id: reply.body.id, voice: true } },
            headers: {}
          })
          assert.strictEqual(sent.audio?.mime_type, VOICE)
          assert.strictEqual(sent.audio?.voice, true)
        }
        // a URL fetched for a send
        const routes = Object.fromEntries(VOICE_TYPES.map((type, i) => [`/voice${i}.ogg`, (res: ServerResponse) => {
          res.writeHead(200, { "content-type": type, "content-length": bytes.byteLength })
          res.end(bytes)
        }]))
        const server = yield* fileServer(routes)
        for (const path of Object.keys(routes)) {
          const sent = yield* client.messages.send({
            payload: { to: FROM, audio: { url: `${server.url}${path}`, voice: true } },
            headers: {}
          })
          assert.strictEqual(sent.audio?.mime_type, VOICE, path)
        }
        // sandbox inbound
        for (const type of VOICE_TYPES) {
          yield* client.sandbox.inbound({
            path: { sessionId: session.id },
            payload: { from: FROM, audio: { data_base64: bytes.toString("base64"), mime_type: type, voice: true } }
          })
        }
        const inbound = yield* eventually(
          Effect.map(
            client.messages.list({ urlParams: { direction: "inbound", limit: 100 } }),
            (page) => page.data.filter((m) => m.type === "audio" && m.media?.status === "ready")
          ),
          (found) => found.length === VOICE_TYPES.length
        )
        for (const message of inbound) {
          assert.strictEqual(message.audio?.mime_type, VOICE)
          const content = yield* request("GET", `/v1/media/${message.media!.id}/content`, { token: key })
          assert.strictEqual(content.headers["content-type"], VOICE)
          assert.strictEqual(content.headers["content-disposition"], "inline")
        }
      }))

    it.effect("checks the bytes of a media sent as a kind, whatever it was uploaded as", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([FROM])
        const client = yield* api(key)
        // a type whose every file has a signature is checked at the door, even as a document
        for (const declared of ["image/jpeg", "image/png", "video/mp4"]) {
          const atDoor = yield* upload(key, EXE, declared, "?kind=document")
          assert.strictEqual(atDoor.status, 422, declared)
          assert.strictEqual(atDoor.body.error.details.reason, "media_type_unsupported", declared)
        }
        // an MP3 may start with a bare frame: the door takes these bytes as declared, the send checks them
        const stored = yield* upload(key, EXE, "audio/mpeg", "?kind=document")
        assert.strictEqual(stored.status, 201)
        for (const kind of ["image", "video", "audio", "sticker"] as const) {
          const reply = yield* refused(
            client.messages.send({ payload: { to: FROM, [kind]: { media_id: stored.body.id } }, headers: {} })
          )
          assert.strictEqual(reply.status, 422, kind)
          assert.strictEqual(reply.details["reason"], "media_type_unsupported", kind)
          assert.strictEqual(reply.details["expected_kind"], kind)
          assert.deepStrictEqual(reply.details["issues"], [{
            path: [kind, "media_id"],
            message: "Not taken, or not the bytes' type"
          }])
        }
        const sandbox = yield* refused(client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: FROM, image: { media_id: stored.body.id } }
        }))
        assert.strictEqual(sandbox.status, 422)
        assert.strictEqual(sandbox.details["reason"], "media_type_unsupported")
        // as what it is, it goes
        const document = yield* client.messages.send({
          payload: { to: FROM, document: { media_id: stored.body.id } },
          headers: {}
        })
        assert.strictEqual(document.type, "document")
      }))

    it.effect("checks a sandbox inbound file like an upload: empty, not the declared type, not a type", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([FROM])
        const client = yield* api(key)
        const inbound = (payload: Parameters<typeof client.sandbox.inbound>[0]["payload"]) =>
          refused(client.sandbox.inbound({ path: { sessionId: session.id }, payload }))
        const empty = yield* inbound({ from: FROM, image: { data_base64: "", mime_type: "image/png" } })
        assert.strictEqual(empty.status, 422)
        assert.strictEqual(empty.details["reason"], "media_empty")
        const mislabelled = yield* inbound({
          from: FROM,
          image: { data_base64: png(2000).toString("base64"), mime_type: "image/jpeg" }
        })
        assert.strictEqual(mislabelled.status, 422)
        assert.strictEqual(mislabelled.details["sniffed_type"], "image/png")
        assert.deepStrictEqual(mislabelled.details["issues"], [{
          path: ["image", "mime_type"],
          message: "Not taken, or not the bytes' type"
        }])
        for (
          const type of [
            "*/*",
            "image/",
            "image/png\r\nX-Injected: 1",
            // the lenient reader kept these as image/png
            "image/png; codecs=opus\r\nX-Injected: 1",
            "IMAGE/PNG\r\n",
            "image/png; Injected",
            "image/png; a=\"Injected"
          ]
        ) {
          const reply = yield* inbound({
            from: FROM,
            document: { data_base64: png(100).toString("base64"), mime_type: type }
          })
          assert.strictEqual(reply.details["reason"], "media_type_invalid", JSON.stringify(type))
          assert.notInclude(JSON.stringify(reply), "Injected")
        }
        // spaces and tabs around a type are not part of it
        yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: FROM, image: { data_base64: png(2000).toString("base64"), mime_type: " IMAGE/PNG\t" } }
        })
        const [message] = yield* eventually(
          Effect.map(client.messages.list({ urlParams: { direction: "inbound" } }), (p) => p.data),
          (all) => all.length === 1
        )
        assert.strictEqual(message!.image?.mime_type, "image/png")
        const media = yield* client.media.get({ path: { mediaId: message!.media!.id } })
        assert.strictEqual(media.mime_type, "image/png")
      }))

    it.scoped("answers 422 url_unreachable when the remote cuts the body short or answers garbage", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([FROM])
        const client = yield* api(key)
        const bytes = png(200_000)
        const server = yield* fileServer({
          "/cut.png": (res) => {
            res.writeHead(200, { "content-type": "image/png", "content-length": bytes.byteLength })
            res.write(bytes.subarray(0, 50_000), () => res.destroy())
          },
          "/cut-early.png": (res) => {
            res.writeHead(200, { "content-type": "image/png", "content-length": bytes.byteLength })
            res.write(bytes.subarray(0, 5), () => res.destroy())
          },
          "/chunked-cut.png": (res) => {
            res.writeHead(200, { "content-type": "image/png" })
            res.write(bytes.subarray(0, 50_000), () => res.socket?.destroy())
          },
          "/any.png": (res) => {
            res.writeHead(200, { "content-type": "*/*", "content-length": bytes.byteLength })
            res.end(bytes)
          }
        })
        for (const path of ["/cut.png", "/cut-early.png", "/chunked-cut.png"]) {
          for (let i = 0; i < 3; i++) {
            const reply = yield* refused(
              client.messages.send({ payload: { to: FROM, image: { url: `${server.url}${path}` } }, headers: {} })
            )
            assert.strictEqual(reply.status, 422, path)
            assert.strictEqual(reply.details["reason"], "url_unreachable", path)
          }
        }
        // a type that names nothing: the bytes decide
        const sent = yield* client.messages.send({
          payload: { to: FROM, image: { url: `${server.url}/any.png` } },
          headers: {}
        })
        assert.strictEqual(sent.image?.mime_type, "image/png")
      }))

    it.scoped(
      "answers 422 url_unreachable when the remote trickles its body past the fetch's 30 s",
      () =>
        Effect.gen(function*() {
          const { key } = yield* sandboxSetup([FROM])
          const client = yield* api(key)
          const bytes = png(100_000)
          const server = yield* fileServer({
            "/slow.png": (res) => {
              res.writeHead(200, { "content-type": "image/png", "content-length": bytes.byteLength })
              let at = 0
              const timer = setInterval(() => {
                if (res.destroyed || at >= bytes.byteLength) return clearInterval(timer)
                res.write(bytes.subarray(at, at + 300))
                at += 300
              }, 250)
            }
          })
          const reply = yield* refused(
            client.messages.send({ payload: { to: FROM, image: { url: `${server.url}/slow.png` } }, headers: {} })
          )
          assert.strictEqual(reply.status, 422)
          assert.strictEqual(reply.details["reason"], "url_unreachable")
        }),
      { timeout: 120_000 }
    )

    it.effect("honours a weak If-None-Match and a Range whose unit is in any case", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([FROM])
        const stored = yield* upload(key, png(1000), "image/png")
        const path = `/v1/media/${stored.body.id}/content`
        const weak = yield* request("GET", path, {
          token: key,
          headers: { "if-none-match": `W/"${stored.body.sha256}"` }
        })
        assert.strictEqual(weak.status, 304)
        const ranged = yield* request("GET", path, { token: key, headers: { range: "Bytes=0-9" } })
        assert.strictEqual(ranged.status, 206)
        assert.strictEqual(ranged.headers["content-range"], "bytes 0-9/1000")
      }))
  })
})
