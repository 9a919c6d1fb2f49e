/**
 * What a QR channel sends besides text, end to end: the real Baileys client sends a location, a
 * reaction (to the contact's message and to ours, and its removal), a quoted reply and an image;
 * the fake contact decrypts each and sees the kind, the reacted message's WhatsApp id, the quoted
 * id, and the image's bytes (downloaded from the fake media host, decrypted) identical to the
 * upload; each moves to `read` on the contact's receipts. Other files: test/qrMediaSends.test.ts.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import type { Messaging } from "@switchboard/domain"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import type { FakeContact, ReceivedMessage } from "./fake-whatsapp/index.js"
import { api, eventually } from "./support/Fixtures.js"
import { appWith, pairedChannel, sendText, Wa } from "./support/QrApp.js"

describe("QR sends: locations, reactions, quoted replies and images", () => {
  layer(appWith({ phoneNumber: "+15550009191" }), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped("the contact receives a location, reactions, a quoted reply and an image byte-identical, each walked to read", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel()
        const client = yield* api(user.accessToken, user.workspaceId)
        const inboundOf = (n: number) =>
          eventually(
            client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId } }),
            (page) => page.data.length === n
          )
        const caps = yield* client.channels.capabilities({ path: { channelId } })
        assert.deepStrictEqual(caps.message_types, [
          "text",
          "image",
          "document",
          "audio",
          "video",
          "sticker",
          "location",
          "reaction"
        ])

        const contact = wa.contact("+4915112340191")
        const theirs = yield* contact.says("is my order on its way?")
        const inbound = yield* inboundOf(1)
        const inboundId = inbound.data[0]!.id
        const { message: ours } = yield* sendText(user, channelId, contact, "It shipped today")

        /** Sends through the API and waits until the contact's phone has it. */
        const sendTo = (to: FakeContact, body: Omit<typeof Messaging.SendMessageRequest.Type, "to" | "channel_id">) =>
          Effect.gen(function*() {
            const before = to.received.length
            // the typed client decodes the declared 201 only
            const sent = yield* client.messages.send({
              payload: { channel_id: channelId, to: to.number, ...body },
              headers: {}
            })
            const received: ReceivedMessage = yield* to.nextReceived(before).pipe(
              Effect.timeout("30 seconds"),
              Effect.catchAll(() =>
                Effect.flatMap(
                  client.messages.get({ path: { messageId: sent.id } }),
                  (m) =>
                    Effect.dieMessage(
                      `the contact never received it (${to.deliveryReport(sent.id)}): ${JSON.stringify(m)}`
                    )
                )
              )
            )
            // our message id is the WhatsApp id
            assert.strictEqual(received.id, sent.id)
            return { id: sent.id, received }
          })
        // at most 6 sends a minute reach one recipient (docs/LIMITS.md): this contact gets 6
        const send = (body: Omit<typeof Messaging.SendMessageRequest.Type, "to" | "channel_id">) =>
          sendTo(contact, body)

        const location = yield* send({
          location: { latitude: 52.52, longitude: 13.405, name: "Depot", address: "Hauptstr. 1" }
        })
        assert.deepStrictEqual(location.received.kind, {
          kind: "location",
          latitude: 52.52,
          longitude: 13.405,
          name: "Depot",
          address: "Hauptstr. 1"
        })
        // a reaction names the reacted message by its WhatsApp id, and whose it is
        const onTheirs = yield* send({ reaction: { message_id: inboundId, emoji: "👍" } })
        assert.deepStrictEqual(onTheirs.received.kind, {
          kind: "reaction",
          targetId: theirs,
          targetFromMe: false,
          emoji: "👍"
        })
        const onOurs = yield* send({ reaction: { message_id: ours.id, emoji: "🎉" } })
        assert.deepStrictEqual(onOurs.received.kind, {
          kind: "reaction",
          targetId: ours.id,
          targetFromMe: true,
          emoji: "🎉"
        })
        const removed = yield* send({ reaction: { message_id: inboundId, emoji: "" } })
        assert.deepStrictEqual(removed.received.kind, {
          kind: "reaction",
          targetId: theirs,
          targetFromMe: false,
          emoji: ""
        })

        // a reply quotes the contact's message: the phone shows the quote with its text
        const reply = yield* send({ text: { body: "Yes, tracking follows" }, reply_to: inboundId })
        assert.deepStrictEqual(reply.received.kind, { kind: "text", text: "Yes, tracking follows" })
        assert.strictEqual(reply.received.quotedId, theirs)
        const quote = reply.received.message.extendedTextMessage?.contextInfo
        assert.strictEqual(quote?.quotedMessage?.conversation, "is my order on its way?")

        // a second contact: a location without name and address, a reply quoting our own message
        const other = wa.contact("+4915112340192")
        yield* other.says("hello")
        yield* inboundOf(2)
        const { message: greeting } = yield* sendText(user, channelId, other, "Welcome!")
        const bare = yield* sendTo(other, { location: { latitude: -33.8688, longitude: 151.2093 } })
        assert.deepStrictEqual(bare.received.kind, {
          kind: "location",
          latitude: -33.8688,
          longitude: 151.2093,
          name: undefined,
          address: undefined
        })
        const replyToOurs = yield* sendTo(other, { text: { body: "(see above)" }, reply_to: greeting.id })
        assert.strictEqual(replyToOurs.received.quotedId, greeting.id)
        assert.strictEqual(
          replyToOurs.received.message.extendedTextMessage?.contextInfo?.quotedMessage?.conversation,
          "Welcome!"
        )

        for (const m of [location, bare, onTheirs, onOurs, removed, reply, replyToOurs]) {
          const read = yield* eventually(
            client.messages.get({ path: { messageId: m.id } }),
            (b) => b.status === "read",
            30_000
          )
          assert.strictEqual(read.status, "read", JSON.stringify(read))
        }

        // an image: streamed from the media store to WhatsApp's media host, byte-identical on the phone
        const http = yield* HttpClient.HttpClient
        const upload = (bytes: Uint8Array, contentType: string) =>
          http.execute(
            HttpClientRequest.post("/v1/media").pipe(
              HttpClientRequest.setHeader("authorization", `Bearer ${user.accessToken}`),
              HttpClientRequest.setHeader("x-workspace-id", user.workspaceId),
              HttpClientRequest.bodyUint8Array(bytes, contentType)
            )
          ).pipe(
            Effect.flatMap((r) =>
              Effect.map(r.json, (body) => ({ status: r.status, body: body as { id: `med_${string}` } }))
            ),
            Effect.tap((r) => assert.strictEqual(r.status, 201, JSON.stringify(r.body))),
            Effect.map((r) => r.body.id),
            Effect.scoped,
            Effect.orDie
          )
        // several media-store chunks (256 KiB each)
        const png = randomBytes(700_000)
        PNG_SIGNATURE.copy(png)
        const imageId = yield* upload(png, "image/png")
        const image = yield* sendTo(other, { image: { media_id: imageId, caption: "your parcel" } })
        assert.deepStrictEqual(image.received.kind, { kind: "image", mimetype: "image/png", caption: "your parcel" })
        assert.strictEqual(Number(image.received.message.imageMessage?.fileLength), png.byteLength)
        const downloaded = yield* other.downloads(image.received, "image")
        assert.strictEqual(downloaded.byteLength, png.byteLength)
        assert.isTrue(downloaded.equals(png), "the contact's image differs from the upload")
        assert.strictEqual(wa.media.uploads.length, 1)
        assert.strictEqual(wa.media.uploads[0]!.kind, "image")

        const imageRead = yield* eventually(
          client.messages.get({ path: { messageId: image.id } }),
          (b) => b.status === "read",
          30_000
        )
        assert.strictEqual(imageRead.status, "read", JSON.stringify(imageRead))
      }))
  })
})

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
