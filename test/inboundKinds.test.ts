/**
 * Inbound messages of every kind (docs/API.md "Messages", "Media"), through the sandbox's simulated
 * network and the typed client: each kind recorded with its member, visible in GET /v1/messages,
 * delivered by a signed webhook with its real `type`; a file's bytes stored before
 * `message.received` and served byte-identical (Range, ETag); another workspace gets 404.
 */
import { assert, describe, layer } from "@effect/vitest"
import type { Messaging } from "@switchboard/domain"
import { verifyWebhook } from "@switchboard/sdk"
import { Effect, Metric } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { api, createKey, eventually, refused, request, sandboxSetup, signUp } from "./support/Fixtures.js"
import { receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

const FROM = "+4915112345678"

/** `switchboard_inbound_messages_total` for one type and outcome, in this process. */
const inboundCount = (type: string, outcome: string) =>
  Effect.map(Metric.snapshot, (pairs) => {
    let sum = 0
    for (const pair of pairs) {
      if (pair.metricKey.name !== "switchboard_inbound_messages_total") continue
      const tags = Object.fromEntries(pair.metricKey.tags.map((t) => [t.key, t.value]))
      if (tags["type"] === type && tags["outcome"] === outcome) {
        sum += (pair.metricState as unknown as { count: number }).count
      }
    }
    return sum
  })

describe("inbound messages of every kind (sandbox)", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped("records each kind, stores files before message.received, and serves them back", () =>
      Effect.gen(function*() {
        const sink = yield* receiver()
        const { key, session, user } = yield* sandboxSetup([FROM])
        const admin = yield* createKey(user, { scopes: ["webhooks.manage"] })
        const endpoint = yield* (yield* api(admin.secret)).webhooks.create({
          payload: { url: `${sink.url}/hooks`, event_types: ["message.received"] }
        })
        const client = yield* api(key)
        const sessionId = session.id
        const inboundMessages = () =>
          Effect.map(client.messages.list({ urlParams: { direction: "inbound", limit: 100 } }), (p) => p.data)
        /** Delivers one inbound message; answers the message recorded for it. */
        const deliver = (payload: Parameters<typeof client.sandbox.inbound>[0]["payload"]) =>
          Effect.gen(function*() {
            const before = (yield* inboundMessages()).length
            yield* client.sandbox.inbound({ path: { sessionId }, payload })
            const after = yield* eventually(inboundMessages(), (all) => all.length > before)
            assert.strictEqual(after.length, before + 1)
            return after[0]!
          })

        const countsBefore = [
          yield* inboundCount("location", "recorded"),
          yield* inboundCount("image", "recorded"),
          yield* inboundCount("image", "media_stored")
        ]
        const ours = yield* client.messages.send({ payload: { to: FROM, text: { body: "hello" } }, headers: {} })
        const text = yield* deliver({ from: FROM, text: { body: "original" } })
        assert.strictEqual(text.type, "text")
        assert.deepStrictEqual(text.sender, { phone_number: FROM, whatsapp_lid: null })
        assert.isNull(text.media)
        assert.deepStrictEqual(ours.context, { reply_to: null })
        assert.isNull(ours.sender)

        const reply = yield* deliver({ from: FROM, text: { body: "replying" }, reply_to: ours.id })
        assert.deepStrictEqual(reply.context, { reply_to: ours.id })
        const location = yield* deliver({
          from: FROM,
          location: { latitude: 52.52, longitude: 13.405, name: "Alexanderplatz" }
        })
        assert.deepStrictEqual(location.location, {
          latitude: 52.52,
          longitude: 13.405,
          name: "Alexanderplatz",
          address: null
        })
        assert.strictEqual(location.text.body, "")
        const contacts = yield* deliver({ from: FROM, contacts: [{ name: "Ada", phones: ["+4915100000001"] }] })
        assert.deepStrictEqual(contacts.contacts, [{ name: "Ada", phones: ["+4915100000001"] }])
        const reaction = yield* deliver({ from: FROM, reaction: { message_id: ours.id, emoji: "👍" } })
        assert.deepStrictEqual(reaction.reaction, { message_id: ours.id, emoji: "👍" })
        const edit = yield* deliver({ from: FROM, edit: { message_id: text.id, text: { body: "edited" } } })
        assert.deepStrictEqual(edit.edit, { message_id: text.id, text: { body: "edited" } })
        assert.strictEqual(edit.text.body, "edited")
        const revoke = yield* deliver({ from: FROM, revoke: { message_id: text.id } })
        assert.deepStrictEqual(revoke.revoke, { message_id: text.id })
        const unsupported = yield* deliver({ from: FROM, unsupported: { kind: "pollCreationMessageV3" } })
        assert.deepStrictEqual(unsupported.unsupported, { kind: "pollCreationMessageV3" })
        // the original keeps its text and stays: an edit and a revoke are messages of their own
        const original = yield* client.messages.get({ path: { messageId: text.id } })
        assert.strictEqual(original.text.body, "original")

        // files: recorded at once with media.status pending or already ready
        // each file begins with its type's signature: inbound files pass the upload's byte check
        const png = randomBytes(300_000)
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(png)
        const pdf = randomBytes(700_000)
        Buffer.from("%PDF-1.7\n").copy(pdf)
        const voice = randomBytes(5_000)
        Buffer.from("OggS").copy(voice)
        const image = yield* deliver({
          from: FROM,
          image: { data_base64: png.toString("base64"), mime_type: "image/png", caption: "look" }
        })
        assert.strictEqual(image.type, "image")
        assert.strictEqual(image.text.body, "look")
        assert.strictEqual(image.image!.caption, "look")
        assert.strictEqual(image.image!.media_id, image.media!.id)
        const document = yield* deliver({
          from: FROM,
          document: { data_base64: pdf.toString("base64"), mime_type: "application/pdf", filename: "Prices 2027.pdf" }
        })
        const audio = yield* deliver({
          from: FROM,
          audio: { data_base64: voice.toString("base64"), mime_type: "audio/ogg", voice: true }
        })
        const settled = (m: Messaging.Message) =>
          Effect.map(
            eventually(
              client.messages.get({ path: { messageId: m.id } }),
              (got) => got.media !== null && got.media.status !== "pending"
            ),
            (got) => got
          )
        const storedImage = yield* settled(image)
        const storedDocument = yield* settled(document)
        const storedAudio = yield* settled(audio)
        assert.strictEqual(storedImage.media!.status, "ready")
        assert.strictEqual(storedImage.image!.size_bytes, png.length)
        assert.strictEqual(storedImage.image!.sha256, createHash("sha256").update(png).digest("hex"))
        assert.strictEqual(storedDocument.document!.filename, "Prices 2027.pdf")
        assert.strictEqual(storedAudio.audio!.voice, true)

        // bytes back, byte-identical, with the documented headers
        const media = yield* client.media.get({ path: { mediaId: storedDocument.media!.id } })
        assert.strictEqual(media.status, "ready")
        assert.strictEqual(media.size_bytes, pdf.length)
        assert.strictEqual(media.message_id, document.id)
        const bytes = yield* client.media.content({ path: { mediaId: media.id }, headers: {} })
        assert.isTrue(Buffer.from(bytes).equals(pdf))
        // raw: the test reads the answer's headers, which the typed client does not show
        const raw = yield* request("GET", `/v1/media/${media.id}/content`, { token: key })
        assert.strictEqual(raw.status, 200)
        assert.strictEqual(raw.headers["content-type"], "application/pdf")
        assert.strictEqual(raw.headers["content-length"], String(pdf.length))
        assert.strictEqual(raw.headers["etag"], `"${createHash("sha256").update(pdf).digest("hex")}"`)
        assert.match(raw.headers["content-disposition"]!, /^attachment; filename="Prices 2027.pdf"/)
        // raw: 304 is a status the contract does not declare
        const notModified = yield* request("GET", `/v1/media/${media.id}/content`, {
          token: key,
          headers: { "if-none-match": raw.headers["etag"]! }
        })
        assert.strictEqual(notModified.status, 304)
        const ranged = yield* client.media.content({
          path: { mediaId: storedImage.media!.id },
          headers: { range: "bytes=262000-262143" }
        })
        assert.isTrue(Buffer.from(ranged).equals(png.subarray(262000, 262144)))
        // raw: the test reads Content-Range and Content-Length
        const partial = yield* request("GET", `/v1/media/${storedImage.media!.id}/content`, {
          token: key,
          headers: { range: "bytes=-10" }
        })
        assert.strictEqual(partial.status, 206)
        assert.strictEqual(partial.headers["content-range"], `bytes ${png.length - 10}-${png.length - 1}/${png.length}`)
        assert.strictEqual(partial.headers["content-length"], "10")
        const beyond = yield* refused(
          client.media.content({ path: { mediaId: media.id }, headers: { range: `bytes=${pdf.length}-` } })
        )
        assert.strictEqual(beyond.status, 416)
        assert.strictEqual(beyond.code, "RANGE_NOT_SATISFIABLE")

        // a stored media sent again by id: a new message with a copy of the same bytes
        const again = yield* deliver({ from: FROM, image: { media_id: storedImage.media!.id, caption: "again" } })
        assert.strictEqual(again.type, "image")
        assert.notStrictEqual(again.media!.id, storedImage.media!.id)
        const storedAgain = yield* settled(again)
        assert.strictEqual(storedAgain.media!.status, "ready")
        const copy = yield* client.media.content({ path: { mediaId: again.media!.id }, headers: {} })
        assert.isTrue(Buffer.from(copy).equals(png))

        // a file of another workspace does not exist there
        const stranger = yield* createKey(yield* signUp())
        const strangers = yield* api(stranger.secret)
        const foreign = {
          metadata: yield* refused(strangers.media.get({ path: { mediaId: media.id } })),
          content: yield* refused(strangers.media.content({ path: { mediaId: media.id }, headers: {} }))
        }
        for (const [what, refusal] of Object.entries(foreign)) {
          assert.strictEqual(refusal.status, 404, what)
          assert.strictEqual(refusal.code, "NOT_FOUND", what)
        }

        // one signed message.received per inbound message, with its type; files' after they were stored
        const all = [
          text,
          reply,
          location,
          contacts,
          reaction,
          edit,
          revoke,
          unsupported,
          image,
          document,
          audio,
          again
        ]
        yield* eventually(Effect.sync(() => sink.received.length), (n) => n >= all.length, 30_000)
        const secret = endpoint.secret
        const received = sink.received.map((r) => {
          assert.isTrue(verifyWebhook(r.body, r.headers as any, secret).valid)
          return JSON.parse(r.body) as {
            type: string
            created_at: string
            data: { message_id: string; type: string; media_status?: string }
          }
        })
        assert.deepStrictEqual(
          received.map((e) => e.data.message_id).sort(),
          all.map((m) => m.id).sort()
        )
        for (const m of all) {
          const event = received.find((e) => e.data.message_id === m.id)!
          assert.strictEqual(event.type, "message.received")
          assert.strictEqual(event.data.type, m.type)
          assert.strictEqual(event.data.media_status, m.media === null ? undefined : "ready")
        }
        // the inbound metric counted them by type and outcome
        assert.deepStrictEqual(
          [
            (yield* inboundCount("location", "recorded")) - countsBefore[0]!,
            (yield* inboundCount("image", "recorded")) - countsBefore[1]!,
            (yield* inboundCount("image", "media_stored")) - countsBefore[2]!
          ],
          [1, 2, 2]
        )
      }))

    it.effect("refuses bad inbound input with the envelope", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([FROM])
        const client = yield* api(key)
        const path = { sessionId: session.id }
        // raw: two kinds in one body is a body the typed client would not send
        const two = yield* request("POST", `/v1/sandbox/sessions/${session.id}/inbound`, {
          token: key,
          body: { from: FROM, text: { body: "a" }, location: { latitude: 1, longitude: 2 } }
        })
        assert.strictEqual(two.status, 422)
        const wrongType = yield* refused(client.sandbox.inbound({
          path,
          payload: {
            from: FROM,
            image: { data_base64: Buffer.from("x").toString("base64"), mime_type: "application/pdf" }
          }
        }))
        assert.strictEqual(wrongType.status, 422)
        assert.strictEqual(wrongType.details["reason"], "media_type_unsupported")
        const big = yield* refused(client.sandbox.inbound({
          path,
          payload: {
            from: FROM,
            image: { data_base64: randomBytes(1024 * 1024 + 1).toString("base64"), mime_type: "image/png" }
          }
        }))
        assert.strictEqual(big.status, 413)
        assert.strictEqual(big.code, "PAYLOAD_TOO_LARGE")
        assert.strictEqual(big.details["limit_bytes"], 1024 * 1024)
        const sticker = yield* refused(client.sandbox.inbound({
          path,
          payload: {
            from: FROM,
            sticker: { data_base64: randomBytes(500 * 1024 + 1).toString("base64"), mime_type: "image/webp" }
          }
        }))
        assert.strictEqual(sticker.status, 413)
        assert.strictEqual(sticker.details["limit_bytes"], 500 * 1024)
        const notBase64 = yield* refused(client.sandbox.inbound({
          path,
          payload: { from: FROM, image: { data_base64: "***", mime_type: "image/png" } }
        }))
        assert.strictEqual(notBase64.status, 422)
        const unknownMedia = yield* refused(client.sandbox.inbound({
          path,
          payload: { from: FROM, image: { media_id: "med_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" } }
        }))
        assert.strictEqual(unknownMedia.status, 404)
        // raw: the test searches the whole answer for the message id it sent (never echoed)
        const elsewhere = yield* request("POST", `/v1/sandbox/sessions/${session.id}/inbound`, {
          token: key,
          body: { from: FROM, reaction: { message_id: "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z", emoji: "👍" } }
        })
        assert.strictEqual(elsewhere.status, 422)
        assert.strictEqual(elsewhere.body.error.details.reason, "message_not_in_session")
        assert.notInclude(JSON.stringify(elsewhere.body), "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z")
        // nothing of it was recorded
        const page = yield* client.messages.list({ urlParams: { direction: "inbound" } })
        assert.strictEqual(page.data.length, 0)
      }))
  })
})
