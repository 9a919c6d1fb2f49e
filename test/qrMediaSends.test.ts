/**
 * Files a QR channel sends besides images, end to end (docs/QR-CHANNELS.md "Sending"): the real
 * Baileys client streams a document, an audio file, a voice note, a video and a sticker from the
 * media store to the fake WhatsApp's media host; the fake contact downloads and decrypts each and
 * gets the uploaded bytes back byte-identical, with the mimetype, the document's filename, the
 * captions and the voice-note flag (`ptt`) as sent; each moves to `read` on the contact's receipts.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import type { FakeContact, MediaKindName, ReceivedMessage } from "./fake-whatsapp/index.js"
import { api, eventually } from "./support/Fixtures.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"

/** Random bytes behind a file type's signature (what the upload route sniffs). */
const withHead = (size: number, head: Buffer, at = 0) => {
  const bytes = randomBytes(size)
  head.copy(bytes, at)
  return bytes
}
const pdf = (size: number) => withHead(size, Buffer.from("%PDF-1.7\n"))
const ogg = (size: number) => withHead(size, Buffer.from("OggS"))
const mpeg = (size: number) => withHead(size, Buffer.from("ID3\x04\x00"))
const mp4 = (size: number) => withHead(size, Buffer.from([0, 0, 0, 0x20, ...Buffer.from("ftypisom")]))
const webp = (size: number) => {
  const bytes = withHead(size, Buffer.from("RIFF"))
  Buffer.from("WEBP").copy(bytes, 8)
  return bytes
}

describe("QR sends: documents, audio, voice notes, videos and stickers", () => {
  layer(appWith({ phoneNumber: "+15550009292" }), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped(
      "the contact receives each file byte-identical with its mimetype, filename, caption and ptt, each walked to read",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { channelId, user } = yield* pairedChannel()
          const sdk = yield* api(user.accessToken, user.workspaceId)
          const caps = yield* sdk.channels.capabilities({ path: { channelId } })
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

          const contact = wa.contact("+4915112340291")
          yield* contact.says("can you send me the invoice?")
          yield* eventually(
            sdk.messages.list({ urlParams: { direction: "inbound", channel_id: channelId } }),
            (page) => page.data.length === 1
          )

          const client = yield* HttpClient.HttpClient
          const upload = (bytes: Uint8Array, contentType: string, query = "") =>
            client.execute(
              HttpClientRequest.post(`/v1/media${query}`).pipe(
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

          type SendPayload = Parameters<typeof sdk.messages.send>[0]["payload"]
          /** Sends through the API, waits until the contact's phone has it, and downloads its file. */
          const sendFile = (to: FakeContact, kind: MediaKindName, body: Record<string, unknown>) =>
            Effect.gen(function*() {
              const before = to.received.length
              // the kind is a variable member: the payload is checked when the typed client encodes it
              const payload = { channel_id: channelId, to: to.number, [kind]: body } as SendPayload
              const sent = yield* sdk.messages.send({ payload, headers: {} })
              assert.strictEqual(sent.type, kind)
              const received: ReceivedMessage = yield* to.nextReceived(before).pipe(
                Effect.timeout("60 seconds"),
                Effect.catchAll(() =>
                  Effect.flatMap(
                    sdk.messages.get({ path: { messageId: sent.id } }),
                    (m) =>
                      Effect.dieMessage(
                        `the contact never received it (${to.deliveryReport(sent.id)}): ${JSON.stringify(m)}`
                      )
                  )
                )
              )
              // our message id is the WhatsApp id
              assert.strictEqual(received.id, sent.id)
              const bytes = yield* to.downloads(received, kind)
              return { id: sent.id, received, bytes }
            })

          // a document over several media-store chunks (256 KiB each), with its filename and a caption
          const invoice = pdf(900_000)
          const invoiceId = yield* upload(invoice, "application/pdf")
          const document = yield* sendFile(contact, "document", {
            media_id: invoiceId,
            filename: "invoice-0042.pdf",
            caption: "your invoice"
          })
          assert.deepStrictEqual(document.received.kind, {
            kind: "document",
            mimetype: "application/pdf",
            fileName: "invoice-0042.pdf",
            caption: "your invoice"
          })
          assert.strictEqual(Number(document.received.message.documentMessage?.fileLength), invoice.byteLength)
          assert.isTrue(document.bytes.equals(invoice), "the contact's document differs from the upload")

          // an audio file (not a voice note)
          const song = mpeg(300_000)
          const songId = yield* upload(song, "audio/mpeg")
          const audio = yield* sendFile(contact, "audio", { media_id: songId })
          assert.deepStrictEqual(audio.received.kind, { kind: "audio", mimetype: "audio/mpeg", ptt: false })
          assert.isTrue(audio.bytes.equals(song), "the contact's audio differs from the upload")

          // a voice note: push-to-talk, played as recorded in the chat
          const note = ogg(120_000)
          const noteId = yield* upload(note, "audio/ogg")
          const voice = yield* sendFile(contact, "audio", { media_id: noteId, voice: true })
          // a voice note goes to WhatsApp as `audio/ogg; codecs=opus`, the only type it plays as one
          assert.deepStrictEqual(voice.received.kind, { kind: "audio", mimetype: "audio/ogg; codecs=opus", ptt: true })
          assert.isTrue(voice.bytes.equals(note), "the contact's voice note differs from the upload")

          // a video with a caption
          const clip = mp4(600_000)
          const clipId = yield* upload(clip, "video/mp4")
          const video = yield* sendFile(contact, "video", { media_id: clipId, caption: "unboxing" })
          assert.deepStrictEqual(video.received.kind, { kind: "video", mimetype: "video/mp4", caption: "unboxing" })
          assert.isTrue(video.bytes.equals(clip), "the contact's video differs from the upload")

          // a sticker
          const face = webp(40_000)
          const faceId = yield* upload(face, "image/webp", "?kind=sticker")
          const sticker = yield* sendFile(contact, "sticker", { media_id: faceId })
          assert.deepStrictEqual(sticker.received.kind, { kind: "sticker", mimetype: "image/webp" })
          assert.isTrue(sticker.bytes.equals(face), "the contact's sticker differs from the upload")

          // every file went through WhatsApp's media host, encrypted (never the plain bytes)
          assert.strictEqual(wa.media.uploads.length, 5)
          for (const [i, plain] of [invoice, song, note, clip, face].entries()) {
            assert.isFalse(wa.media.uploads[i]!.bytes.subarray(0, 64).equals(plain.subarray(0, 64)))
          }

          for (const m of [document, audio, voice, video, sticker]) {
            const read = yield* eventually(
              sdk.messages.get({ path: { messageId: m.id } }),
              (b) => b.status === "read",
              30_000
            )
            assert.strictEqual(read.status, "read", JSON.stringify(read))
          }
        }),
      180_000
    )
  })
})
