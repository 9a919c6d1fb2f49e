/**
 * What contacts send to a QR channel, end to end: the real Baileys client hears it from the fake
 * WhatsApp server, the API shows every kind with its member, a signed webhook carries it, files
 * are downloaded from the fake media host (decrypted by Baileys) and served back byte-identical;
 * groups and status posts are not recorded; texts sent while the link was down arrive once it is
 * back, each once.
 */
import { assert, describe, layer } from "@effect/vitest"
import type { Messaging } from "@switchboard/domain"
import { InboundMetrics } from "@switchboard/providers"
import { verifyWebhook } from "@switchboard/sdk"
import { proto } from "baileys"
import { Effect, Metric, MetricLabel } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { api, createKey, eventually, request, type SignedUp } from "./support/Fixtures.js"
import { appWith, inboundUntil, pairedChannel, sendText, Wa } from "./support/QrApp.js"
import { receiver } from "./support/Receiver.js"

const PHONE = "+15550008888"

const ignoredCount = (reason: string) =>
  Effect.map(
    Metric.value(Metric.taggedWithLabels(InboundMetrics.inboundMessages, [
      MetricLabel.make("type", "text"),
      MetricLabel.make("outcome", "ignored"),
      MetricLabel.make("reason", reason)
    ])),
    (state) => state.count
  )
const ignored = Effect.all({ group: ignoredCount("group"), status: ignoredCount("status_broadcast") })

describe("QR inbound messages of every kind", () => {
  layer(appWith({ phoneNumber: PHONE }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "records each kind a contact sends, delivers it signed, and serves its file back byte-identical",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { channelId, user } = yield* pairedChannel()
          const sink = yield* receiver()
          const admin = yield* createKey(user, { scopes: ["webhooks.manage"] })
          // the typed client decodes the declared 201 only
          const endpoint = yield* (yield* api(admin.secret)).webhooks.create({
            payload: { url: `${sink.url}/hooks`, event_types: ["message.received"] }
          })
          const contact = wa.contact("+4915112340077")
          // the contact writes first, we answer, then it sends one of each kind
          const text = yield* contact.says("where is it?")
          yield* inboundUntil(user, channelId, (data) => data.length === 1)
          const { message: ours } = yield* sendText(user, channelId, contact, "Your order shipped")
          const Type = proto.Message.ProtocolMessage.Type

          // each file begins with its type's signature: inbound files pass the upload's byte check
          const signed = (size: number, head: Buffer) => {
            const bytes = randomBytes(size)
            head.copy(bytes)
            return bytes
          }
          const png = signed(200_000, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
          const voice = signed(8_000, Buffer.from("OggS\0\x02"))
          const pdf = signed(400_000, Buffer.from("%PDF-1.7\n"))
          const mp4 = signed(120_000, Buffer.from([0, 0, 0, 0x20, ...Buffer.from("ftypisom")]))
          const webp = signed(20_000, Buffer.from("RIFF\0\0\0\0WEBPVP8 "))
          const sent = {
            text,
            reply: yield* contact.sends({
              extendedTextMessage: {
                text: "thanks!",
                contextInfo: { stanzaId: ours.id, quotedMessage: { conversation: "x" } }
              }
            }),
            reaction: yield* contact.sends({ reactionMessage: { key: { id: ours.id }, text: "👍" } }),
            edit: yield* contact.sends({
              protocolMessage: { type: Type.MESSAGE_EDIT, key: { id: text }, editedMessage: { conversation: "where?" } }
            }),
            revoke: yield* contact.sends({ protocolMessage: { type: Type.REVOKE, key: { id: text } } }),
            location: yield* contact.sends({
              locationMessage: { degreesLatitude: 52.52, degreesLongitude: 13.405, name: "Depot", address: "Str. 1" }
            }),
            contacts: yield* contact.sends({
              contactMessage: { displayName: "Ann", vcard: "BEGIN:VCARD\nTEL;waid=4915112345678:+49 151\nEND:VCARD" }
            }),
            unsupported: yield* contact.sends({
              pollCreationMessageV3: { name: "Lunch?", options: [{ optionName: "y" }] }
            }),
            image: (yield* contact.sendsMedia("image", png, { mimetype: "image/png", caption: "the box" })).id,
            audio: (yield* contact.sendsMedia("audio", voice, { mimetype: " AUDIO/OGG ;codecs=opus", ptt: true })).id,
            document:
              (yield* contact.sendsMedia("document", pdf, { mimetype: "application/pdf", fileName: "Invoice.pdf" })).id,
            video: (yield* contact.sendsMedia("video", mp4, { mimetype: "video/mp4" })).id,
            sticker: (yield* contact.sendsMedia("sticker", webp, { mimetype: "image/webp" })).id
          }
          const kinds = Object.keys(sent)

          // every message recorded; files settled (stored) before their event
          const messages = yield* inboundUntil(
            user,
            channelId,
            (data) =>
              data.length === kinds.length && data.every((m) => m.media === null || m.media.status !== "pending"),
            60_000
          )
          assert.strictEqual(messages.length, kinds.length, JSON.stringify(messages))
          const byType = (type: string) => {
            const found = messages.filter((m) => m.type === type)
            assert.strictEqual(found.length, type === "text" ? 2 : 1, type)
            return found[found.length - 1]!
          }
          for (const m of messages) {
            assert.strictEqual(m.from, contact.number)
            // the channel's own number, learnt at pairing (the connection opened before it was known)
            assert.strictEqual(m.to, PHONE)
          }
          const original = messages.find((m) => m.type === "text" && m.text.body === "where is it?")!
          const reply = messages.find((m) => m.type === "text" && m.text.body === "thanks!")!
          assert.deepStrictEqual(reply.context, { reply_to: ours.id })
          assert.deepStrictEqual(byType("reaction").reaction, { message_id: ours.id, emoji: "👍" })
          assert.deepStrictEqual(byType("edit").edit, { message_id: original.id, text: { body: "where?" } })
          assert.deepStrictEqual(byType("revoke").revoke, { message_id: original.id })
          assert.deepStrictEqual(byType("location").location, {
            latitude: 52.52,
            longitude: 13.405,
            name: "Depot",
            address: "Str. 1"
          })
          assert.deepStrictEqual(byType("contacts").contacts, [{ name: "Ann", phones: ["+4915112345678"] }])
          assert.deepStrictEqual(byType("unsupported").unsupported, { kind: "pollCreationMessageV3" })
          // the original keeps its text: an edit and a revoke are messages of their own
          const again = yield* (yield* api(user.accessToken, user.workspaceId)).messages.get({
            path: { messageId: original.id }
          })
          assert.strictEqual(again.text.body, "where is it?")

          const reader = yield* createKey(user, { mode: "live", scopes: ["messages.read"] })
          const client = yield* api(reader.secret)
          const files: ReadonlyArray<readonly ["image" | "audio" | "document" | "video" | "sticker", Buffer, string]> =
            [
              ["image", png, "image/png"],
              ["audio", voice, "audio/ogg; codecs=opus"],
              ["document", pdf, "application/pdf"],
              ["video", mp4, "video/mp4"],
              ["sticker", webp, "image/webp"]
            ]
          for (const [type, bytes, mime] of files) {
            const m = byType(type)
            assert.strictEqual(m.media!.status, "ready", `${type}: ${JSON.stringify(m.media)}`)
            const member = m[type]!
            assert.strictEqual(member.media_id, m.media!.id)
            assert.strictEqual(member.size_bytes, bytes.length)
            assert.strictEqual(member.sha256, createHash("sha256").update(bytes).digest("hex"))
            assert.strictEqual(member.mime_type, mime)
            const content = yield* client.media.content({ path: { mediaId: m.media!.id }, headers: {} })
            assert.isTrue(Buffer.from(content).equals(bytes), `${type} bytes differ`)
          }
          assert.strictEqual(byType("image").image!.caption, "the box")
          assert.strictEqual(byType("audio").audio!.voice, true)
          // the voice note's type as WhatsApp writes it, in any case and spacing: stored canonical,
          // served with its codec and inline so a browser plays it
          const played = yield* request("GET", `/v1/media/${byType("audio").media!.id}/content`, {
            token: reader.secret
          })
          assert.strictEqual(played.headers["content-type"], "audio/ogg; codecs=opus")
          assert.strictEqual(played.headers["content-disposition"], "inline")
          assert.strictEqual(byType("document").document!.filename, "Invoice.pdf")

          // one signed message.received per message, with its type
          yield* eventually(Effect.sync(() => sink.received.length), (n) => n >= kinds.length, 30_000)
          const secret = endpoint.secret
          const events = sink.received.map((r) => {
            assert.isTrue(verifyWebhook(r.body, r.headers as Record<string, string>, secret).valid)
            return JSON.parse(r.body) as { type: string; data: { message_id: string; type: string } }
          })
          assert.deepStrictEqual(events.map((e) => e.data.message_id).sort(), messages.map((m) => m.id).sort())
          for (const m of messages) {
            const event = events.find((e) => e.data.message_id === m.id)!
            assert.strictEqual(event.type, "message.received")
            assert.strictEqual(event.data.type, m.type)
          }
        }),
      180_000
    )

    it.scoped("keeps a sender WhatsApp names only by LID, and merges it into the phone contact once the number shows", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Lid")
        const hidden = wa.contact("+4915112340066")
        yield* hidden.says("who am I", { addressing: "lid" })
        const first = yield* inboundUntil(user, channelId, (data) => data.length === 1)
        const lidMessage = first[0]!
        assert.isNull(lidMessage.from, JSON.stringify(first))
        assert.deepStrictEqual(lidMessage.sender, { phone_number: null, whatsapp_lid: hidden.lidUser })

        // WhatsApp names both forms: the mapping is kept and the LID's contact merged into the number's
        yield* hidden.says("it's me", { addressing: "lid+pn" })
        const messages = yield* inboundUntil(
          user,
          channelId,
          (data) => data.length === 2 && new Set(data.map((m) => m.contact_id)).size === 1
        )
        assert.strictEqual(new Set(messages.map((m) => m.contact_id)).size, 1, JSON.stringify(messages))
        const contact = yield* (yield* api(user.accessToken, user.workspaceId)).contacts.get({
          path: { contactId: messages[0]!.contact_id! }
        })
        assert.strictEqual(contact.phone_number, hidden.number, JSON.stringify(contact))
        assert.strictEqual(contact.whatsapp_lid, hidden.lidUser)
      }))

    it.scoped("ignores status posts (by phone number or by LID), counted; a group message goes to its group chat only", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Status")
        const poster = wa.contact("+4915112340088")
        const lidPoster = wa.contact("+4915112340089")
        const before = yield* ignored
        yield* poster.says("in the group", { chat: "group" })
        yield* poster.says("my status", { chat: "status" })
        yield* lidPoster.says("my lid status", { chat: "status", addressing: "lid+pn" })
        // status posts are ignored on purpose, and counted by reason (docs/OPERATING.md "Metrics");
        // a group chat's message is recorded, not ignored
        const counted = yield* eventually(
          Effect.map(ignored, (now) => ({ group: now.group - before.group, status: now.status - before.status })),
          (c) => c.status >= 2
        )
        assert.deepStrictEqual(counted, { group: 0, status: 2 })
        yield* poster.says("direct")
        const recorded = yield* inboundUntil(user, channelId, (data) => data.length >= 2)
        const direct = recorded.filter((m) => m.group_chat_id === undefined)
        const inGroup = recorded.filter((m) => m.group_chat_id !== undefined)
        assert.deepStrictEqual(direct.map((m) => m.text.body), ["direct"], JSON.stringify(recorded))
        assert.deepStrictEqual(inGroup.map((m) => m.text.body), ["in the group"], JSON.stringify(recorded))
        // the direct message's conversation is the poster's own, not the group chat's
        assert.notStrictEqual(direct[0]!.conversation_id, inGroup[0]!.conversation_id)
      }))

    it.scoped("records texts sent while the link was down once it is back, each once", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Offline")
        const contact = wa.contact("+4915112340099")
        wa.holdLogins()
        wa.dropConnections()
        yield* wa.until(() => !wa.companionOnline)
        const bodies = ["sent while you were away", "and another one"]
        const ids: Array<string> = []
        for (const body of bodies) ids.push(yield* contact.says(body))
        // WhatsApp delivers again what a device did not acknowledge: the same id twice
        yield* contact.says(bodies[0]!, { id: ids[0]! })
        assert.strictEqual(wa.heldOffline, 3)
        wa.releaseLogins()

        const recorded = yield* inboundUntil(user, channelId, (data) => data.length >= 2, 30_000)
        yield* contact.says("live again")
        const all = yield* inboundUntil(user, channelId, (data) => data.length >= 3, 30_000)
        assert.sameMembers(all.map((m) => m.text.body), [...bodies, "live again"], JSON.stringify(recorded))
      }))
  })
})
