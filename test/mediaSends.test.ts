/**
 * Sends of every kind beyond text (docs/API.md "Messages", "Media") through the sandbox and the typed
 * client: files by `media_id` (uploaded with `POST /v1/media`) or by `url` (fetched once through
 * the egress policy), locations, reactions and quoted replies, on `POST /v1/messages` and on
 * conversation replies; each dispatched and delivered like a text. Refusals: more than one kind,
 * a file the kind does not take, a message of another conversation, a channel whose capabilities
 * lack the kind (409), and URLs the egress policy refuses (the webhooks' probes).
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { api, type Refusal, refused, request, sandboxSetup, waitForMessage } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"
const OTHER = "+4915187654321"

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
const mp4 = (size: number) => {
  const bytes = randomBytes(size)
  Buffer.from([0, 0, 0, 0x20]).copy(bytes)
  Buffer.from("ftypisom").copy(bytes, 4)
  return bytes
}
const ogg = (size: number) => {
  const bytes = randomBytes(size)
  Buffer.from("OggS").copy(bytes)
  return bytes
}

/** Uploads raw bytes; answers the media id. */
const upload = (token: string, bytes: Uint8Array, contentType: string, query = "") =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post(`/v1/media${query}`).pipe(
        HttpClientRequest.setHeader("authorization", `Bearer ${token}`),
        HttpClientRequest.bodyUint8Array(bytes, contentType)
      )
    )
    const body = (yield* response.json) as { id: `med_${string}` }
    assert.strictEqual(response.status, 201)
    return body.id
  }).pipe(Effect.scoped, Effect.orDie)

/** A local file server: `/file.png` answers the bytes; `/redirect` a 302 to it. */
const fileServer = (bytes: Uint8Array, contentType: string) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; close: () => void }>((resume) => {
      const server = createServer((req, res) => {
        if (req.url === "/redirect") {
          res.writeHead(302, { location: "/file.png" })
          res.end()
          return
        }
        res.writeHead(200, { "content-type": contentType, "content-length": bytes.byteLength })
        res.end(bytes)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, close: () => server.close() }))
      })
    }),
    (s) => Effect.sync(s.close)
  )

describe("sends of every kind (sandbox)", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("sends an uploaded image with its caption, delivered like a text", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const bytes = png(3000)
        const mediaId = yield* upload(key, bytes, "image/png")
        const client = yield* api(key)
        const sent = yield* client.messages.send({
          payload: { to: TO, image: { media_id: mediaId, caption: "Our menu" } },
          headers: {}
        })
        assert.strictEqual(sent.type, "image")
        assert.strictEqual(sent.text.body, "Our menu")
        assert.deepStrictEqual(sent.image, {
          media_id: mediaId,
          mime_type: "image/png",
          size_bytes: bytes.byteLength,
          sha256: createHash("sha256").update(bytes).digest("hex"),
          caption: "Our menu"
        })
        assert.deepStrictEqual(sent.media, { id: mediaId, status: "ready", failure_reason: null })
        const delivered = yield* waitForMessage(key, sent.id, (m) => m.status === "delivered" || m.status === "read")
        assert.deepStrictEqual(delivered.image, sent.image)
      }))

    it.effect("sends a document with its file name, a voice note, a video and a sticker", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const client = yield* api(key)
        const send = (payload: Parameters<typeof client.messages.send>[0]["payload"]) =>
          client.messages.send({ payload, headers: {} })
        const pdf = yield* upload(key, Buffer.from("%PDF-1.7 invoice"), "application/pdf")
        const document = yield* send({
          to: TO,
          document: { media_id: pdf, filename: "invoice-42.pdf", caption: "Due" }
        })
        assert.include(document.document, { filename: "invoice-42.pdf", caption: "Due", mime_type: "application/pdf" })
        const voice = yield* send({
          to: TO,
          audio: { media_id: yield* upload(key, ogg(900), "audio/ogg"), voice: true }
        })
        assert.include(voice.audio, { voice: true, caption: null, mime_type: "audio/ogg" })
        const video = yield* send({ to: TO, video: { media_id: yield* upload(key, mp4(4000), "video/mp4") } })
        assert.include(video.video, { mime_type: "video/mp4", caption: null })
        const sticker = yield* send({
          to: TO,
          sticker: { media_id: yield* upload(key, webp(800), "image/webp", "?kind=sticker") }
        })
        assert.strictEqual(sticker.type, "sticker")
        for (const m of [document, voice, video, sticker]) {
          yield* waitForMessage(key, m.id, (x) => x.status === "delivered" || x.status === "read")
        }
      }))

    it.scoped("refuses voice: true on audio that is not Ogg Opus, on a send and on a sandbox inbound message", () =>
      Effect.gen(function*() {
        const { key, session, user } = yield* sandboxSetup([TO])
        const client = yield* api(key)
        const mp3 = Buffer.concat([Buffer.from("ID3\x04\0\0\0\0\0\0"), randomBytes(900)])
        const song = yield* upload(key, mp3, "audio/mpeg")
        const vorbis = yield* upload(key, ogg(900), "audio/ogg; codecs=vorbis")
        // an Ogg Vorbis file labelled plain audio/ogg: its first packet says vorbis
        const vorbisBytes = ogg(900)
        vorbisBytes.set([0, 2], 4)
        vorbisBytes[26] = 1
        vorbisBytes[27] = 30
        vorbisBytes.set(Buffer.from("\x01vorbis", "latin1"), 28)
        const labelled = yield* upload(key, vorbisBytes, "audio/ogg")
        const expectVoiceRefusal = (reply: Refusal, what: string) => {
          assert.strictEqual(reply.status, 422, what)
          assert.strictEqual(reply.details["reason"], "voice_note_type_unsupported", what)
          assert.deepStrictEqual(reply.details["expected_types"], ["audio/ogg; codecs=opus"], what)
          assert.deepStrictEqual(
            reply.details["issues"],
            [{ path: ["audio", "voice"], message: "Only Ogg Opus audio can be a voice note" }],
            what
          )
        }
        for (const mediaId of [song, vorbis, labelled]) {
          expectVoiceRefusal(
            yield* refused(
              client.messages.send({ payload: { to: TO, audio: { media_id: mediaId, voice: true } }, headers: {} })
            ),
            mediaId
          )
        }
        expectVoiceRefusal(
          yield* refused(client.sandbox.inbound({
            path: { sessionId: session.id },
            payload: { from: TO, audio: { data_base64: mp3.toString("base64"), mime_type: "audio/mpeg", voice: true } }
          })),
          "sandbox inbound"
        )
        // by URL: refused once fetched, and the fetched file is not kept
        const sql = yield* SqlClient.SqlClient
        const stored = () =>
          Effect.map(
            sql<{ n: number }>`SELECT count(*)::int AS n FROM media WHERE workspace_id = ${user.workspaceId}`,
            (rows) => rows[0]!.n
          ).pipe(Effect.orDie)
        const before = yield* stored()
        const server = yield* fileServer(mp3, "audio/mpeg")
        expectVoiceRefusal(
          yield* refused(client.messages.send({
            payload: { to: TO, audio: { url: `${server.url}/file.mp3`, voice: true } },
            headers: {}
          })),
          "by URL"
        )
        assert.strictEqual(yield* stored(), before)
        // nothing was sent or recorded
        assert.deepStrictEqual((yield* client.messages.list({ urlParams: {} })).data, [])
        // the same files go as plain audio
        const plain = yield* client.messages.send({ payload: { to: TO, audio: { media_id: song } }, headers: {} })
        assert.include(plain.audio, { voice: false, mime_type: "audio/mpeg" })
      }))

    it.effect("sends a location, a reaction and a quoted reply within the conversation", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([TO, OTHER])
        const client = yield* api(key)
        const send = (payload: Parameters<typeof client.messages.send>[0]["payload"]) =>
          client.messages.send({ payload, headers: {} })
        const first = yield* send({ to: TO, text: { body: "hello" } })
        yield* client.sandbox.inbound({ path: { sessionId: session.id }, payload: { from: TO, text: { body: "hi!" } } })
        const inbound = yield* Effect.gen(function*() {
          for (let i = 0; i < 100; i++) {
            const page = yield* client.messages.list({ urlParams: { direction: "inbound" } })
            if (page.data.length > 0) return page.data[0]!
            yield* Effect.sleep("100 millis")
          }
          return yield* Effect.dieMessage("no inbound message")
        })
        const location = yield* send({ to: TO, location: { latitude: 52.52, longitude: 13.405, name: "Office" } })
        assert.deepStrictEqual(location.location, { latitude: 52.52, longitude: 13.405, name: "Office", address: null })
        const reaction = yield* send({ to: TO, reaction: { message_id: inbound.id, emoji: "👍" } })
        assert.deepStrictEqual(reaction.reaction, { message_id: inbound.id, emoji: "👍" })
        const unreact = yield* send({ to: TO, reaction: { message_id: first.id, emoji: "" } })
        assert.deepStrictEqual(unreact.reaction, { message_id: first.id, emoji: "" })
        const reply = yield* send({ to: TO, text: { body: "answering" }, reply_to: inbound.id })
        assert.deepStrictEqual(reply.context, { reply_to: inbound.id })
        for (const m of [location, reaction, reply]) {
          yield* waitForMessage(key, m.id, (x) => x.status === "delivered" || x.status === "read")
        }
        // the conversation's reply route takes the same kinds
        const conversation = yield* client.conversations.get({ path: { conversationId: first.conversation_id } })
        const image = yield* upload(key, png(500), "image/png")
        const replied = yield* client.conversations.reply({
          path: { conversationId: conversation.id },
          payload: { image: { media_id: image }, reply_to: inbound.id },
          headers: {}
        })
        assert.strictEqual(replied.type, "image")
        assert.deepStrictEqual(replied.context, { reply_to: inbound.id })
        // a message of another conversation cannot be quoted or reacted to
        const elsewhere = yield* refused(send({ to: OTHER, reaction: { message_id: inbound.id, emoji: "👍" } }))
        assert.strictEqual(elsewhere.status, 422)
        assert.strictEqual(elsewhere.details["reason"], "message_not_in_conversation")
        const quoteElsewhere = yield* refused(send({ to: OTHER, text: { body: "x" }, reply_to: first.id }))
        assert.strictEqual(quoteElsewhere.details["reason"], "message_not_in_conversation")
      }))

    it.effect("refuses two kinds at once, a file the kind does not take, and an unknown media", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const image = yield* upload(key, png(600), "image/png")
        // raw: two kinds in one message and two sources of one file are bodies the typed client would not send
        const both = yield* request("POST", "/v1/messages", {
          token: key,
          body: { to: TO, text: { body: "x" }, image: { media_id: image } }
        })
        assert.strictEqual(both.status, 422)
        // raw: two sources of one file, a body the typed client would not send
        const twoSources = yield* request("POST", "/v1/messages", {
          token: key,
          body: { to: TO, image: { media_id: image, url: "https://example.com/a.png" } }
        })
        assert.strictEqual(twoSources.status, 422)
        const client = yield* api(key)
        const send = (payload: Parameters<typeof client.messages.send>[0]["payload"]) =>
          refused(client.messages.send({ payload, headers: {} }))
        const pngSticker = yield* send({ to: TO, sticker: { media_id: image } })
        assert.strictEqual(pngSticker.status, 422)
        assert.strictEqual(pngSticker.details["reason"], "media_type_unsupported")
        const pngVideo = yield* send({ to: TO, video: { media_id: image } })
        assert.strictEqual(pngVideo.details["reason"], "media_type_unsupported")
        const unknown = yield* send({
          to: TO,
          image: { media_id: "med_01M8C0CKK1C4DQBQCK3594RW0W" as `med_${string}` }
        })
        // an id that names nothing is its resource's 404, well formed or not
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.code, "NOT_FOUND")
        assert.strictEqual(unknown.details["resource"], "media")
        const list = yield* client.messages.list({ urlParams: {} })
        assert.strictEqual(list.data.length, 0)
      }))

    it.effect("refuses a kind the channel's capabilities lack with 409 message_type_unsupported", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([TO])
        const image = yield* upload(key, png(600), "image/png")
        const sql = yield* SqlClient.SqlClient
        // a provider that sends text only (as a linked device did before media sends)
        yield* sql`UPDATE channels SET capabilities = '{"max_throughput_mps": 2, "message_types": ["text"]}'::jsonb
          WHERE id = ${session.channel_id}`
        const client = yield* api(key)
        const refusal = yield* refused(
          client.messages.send({ payload: { to: TO, image: { media_id: image } }, headers: {} })
        )
        assert.strictEqual(refusal.status, 409)
        assert.strictEqual(refusal.code, "CHANNEL_CAPABILITY_UNAVAILABLE")
        assert.deepStrictEqual(refusal.details, { reason: "message_type_unsupported", type: "image" })
        const location = yield* refused(
          client.messages.send({ payload: { to: TO, location: { latitude: 1, longitude: 2 } }, headers: {} })
        )
        assert.strictEqual(location.details["type"], "location")
      }))

    it.scoped("fetches a URL's file once when the send is accepted (private targets allowed here)", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const bytes = png(5000)
        const server = yield* fileServer(bytes, "image/png")
        const client = yield* api(key)
        const sent = yield* client.messages.send({
          payload: { to: TO, image: { url: `${server.url}/file.png`, caption: "from a URL" } },
          headers: {}
        })
        assert.strictEqual(sent.image?.size_bytes, bytes.byteLength)
        assert.strictEqual(sent.image?.sha256, createHash("sha256").update(bytes).digest("hex"))
        const media = yield* client.media.get({ path: { mediaId: sent.image!.media_id } })
        assert.strictEqual(media.status, "ready")
        // redirects are not followed; a file that is not what the kind takes is refused
        const redirected = yield* refused(
          client.messages.send({ payload: { to: TO, image: { url: `${server.url}/redirect` } }, headers: {} })
        )
        assert.strictEqual(redirected.status, 422)
        assert.strictEqual(redirected.details["reason"], "url_unreachable")
        const asSticker = yield* refused(
          client.messages.send({ payload: { to: TO, sticker: { url: `${server.url}/file.png` } }, headers: {} })
        )
        assert.strictEqual(asSticker.details["reason"], "media_type_unsupported")
      }))

    it.scoped("names a document fetched by URL after its last path segment: 255 characters, none for %00", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const server = yield* fileServer(Buffer.from("%PDF-1.7\nhello\n"), "application/pdf")
        const client = yield* api(key)
        const nameFor = (path: string) =>
          Effect.map(
            client.messages.send({ payload: { to: TO, document: { url: `${server.url}/${path}` } }, headers: {} }),
            (sent) => sent.document?.filename
          )
        // U+0000 cannot be stored: the document goes without a name (this was a 500)
        assert.isNull(yield* nameFor("menu%00.pdf"))
        assert.strictEqual(yield* nameFor("menu%20card.pdf"), "menu card.pdf")
        // 255 characters, an emoji one of them and never cut in half
        const emoji = "\u{1F600}"
        assert.strictEqual(yield* nameFor(`${"a".repeat(254)}%F0%9F%98%80`), `${"a".repeat(254)}${emoji}`)
        assert.strictEqual(yield* nameFor(`${"a".repeat(254)}%F0%9F%98%80%F0%9F%98%80`), `${"a".repeat(254)}${emoji}`)
      }))
  })
})

describe("URL sends under the default egress policy", () => {
  layer(TestApp.layer({}, { webhooks: { allowPrivateTargets: false } }), {
    excludeTestServices: true,
    timeout: 120_000
  })(
    (it) => {
      it.effect("refuses private, link-local, metadata and odd-port targets before fetching anything", () =>
        Effect.gen(function*() {
          const { key } = yield* sandboxSetup([TO])
          const client = yield* api(key)
          const probes = [
            ["http://127.0.0.1/a.png", "private_address"],
            ["http://169.254.169.254/latest/meta-data", "private_address"],
            ["http://[::1]/a.png", "private_address"],
            ["http://[::ffff:10.0.0.1]/a.png", "private_address"],
            ["http://10.1.2.3/a.png", "private_address"],
            ["https://example.com:8443/a.png", "port_not_allowed"],
            ["ftp://example.com/a.png", "unsupported_scheme"],
            ["https://user:pw@example.com/a.png", "credentials_in_url"]
          ] as const
          for (const [url, refusal] of probes) {
            const reply = yield* refused(client.messages.send({ payload: { to: TO, image: { url } }, headers: {} }))
            assert.strictEqual(reply.status, 422, url)
            assert.strictEqual(reply.details["reason"], "url_refused", url)
            assert.strictEqual(reply.details["refusal"], refusal, url)
            assert.notInclude(JSON.stringify(reply), "meta-data")
          }
          const list = yield* client.messages.list({ urlParams: {} })
          assert.strictEqual(list.data.length, 0)
        }))
    }
  )
})
