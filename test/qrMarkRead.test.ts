/**
 * Marking inbound messages read on a QR channel (docs/QR-CHANNELS.md "Read receipts"): the real
 * Baileys client sends WhatsApp's read receipts (blue ticks) to the fake server, to the sender's
 * number or, for a sender known only by LID, to its LID; a repeated call sends nothing new.
 */
import { assert, describe, it as unit, layer } from "@effect/vitest"
import { QrConnection } from "@switchboard/providers"
import { Effect } from "effect"
import { eventually, request } from "./support/Fixtures.js"
import { appWith, as, pairedChannel, Wa } from "./support/QrApp.js"

interface ApiMessage {
  readonly id: string
  readonly conversation_id: string
  readonly read_at: string | null
  readonly text: { readonly body: string }
}

describe("QR read receipts", () => {
  unit("go to the sender's LID when one is recorded, else to its number", () => {
    const { readerJid } = QrConnection
    assert.strictEqual(readerJid({ phoneNumber: "+4915112340055", whatsappLid: null }), "4915112340055@s.whatsapp.net")
    assert.strictEqual(readerJid({ phoneNumber: null, whatsappLid: "123456789012345" }), "123456789012345@lid")
    assert.strictEqual(
      readerJid({ phoneNumber: "+4915112340055", whatsappLid: "123456789012345" }),
      "123456789012345@lid"
    )
    assert.isUndefined(readerJid({ phoneNumber: null, whatsappLid: null }))
  })

  layer(appWith({ phoneNumber: "+15550007777" }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "sends WhatsApp read receipts for the messages a conversation's read marks, and none again",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { channelId, user } = yield* pairedChannel()
          const contact = wa.contact("+4915112340055")
          const ids = [yield* contact.says("first"), yield* contact.says("second")]
          const inbound = (n: number) =>
            eventually(
              request("GET", `/v1/messages?direction=inbound&channel_id=${channelId}`, as(user)),
              (r) => r.body?.data?.length === n
            ).pipe(Effect.map((r) => r.body.data as ReadonlyArray<ApiMessage>))
          const [latest] = yield* inbound(2)
          assert.deepStrictEqual(contact.readReceipts, [], "nothing is read before the business reads it")

          const read = yield* request("POST", `/v1/conversations/${latest!.conversation_id}/read`, as(user))
          assert.strictEqual(read.status, 200, read.text)
          assert.strictEqual(read.body.unread_count, 0)
          const jid = "4915112340055@s.whatsapp.net"
          yield* eventually(Effect.sync(() => contact.readReceipts.length), (n) => n >= 2, 30_000)
          assert.sameDeepMembers(contact.readReceipts, ids.map((id) => ({ id, to: jid })))

          // again: nothing is unread, so nothing is sent
          const again = yield* request("POST", `/v1/conversations/${latest!.conversation_id}/read`, as(user))
          assert.strictEqual(again.status, 200, again.text)

          // a sender known only by its LID gets its receipt at its LID (one message route); the
          // link carries stanzas in order, so once it arrives nothing more came for the first contact
          const hidden = wa.contact("+4915112340056")
          const hiddenId = yield* hidden.says("who am I", { addressing: "lid" })
          const lidMessage = (yield* inbound(3)).find((m) => m.text.body === "who am I")!
          const one = yield* request("POST", `/v1/messages/${lidMessage.id}/read`, as(user))
          assert.strictEqual(one.status, 200, one.text)
          assert.isNotNull(one.body.read_at)
          yield* eventually(Effect.sync(() => hidden.readReceipts.length), (n) => n >= 1, 30_000)
          assert.deepStrictEqual(hidden.readReceipts, [{ id: hiddenId, to: `${hidden.lidUser}@lid` }])
          assert.strictEqual(contact.readReceipts.length, 2, JSON.stringify(contact.readReceipts))
        }),
      180_000
    )
  })
})
