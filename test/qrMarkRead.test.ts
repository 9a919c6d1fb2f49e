/**
 * Marking inbound messages read on a QR channel (docs/QR-CHANNELS.md "Read receipts"): the real
 * Baileys client sends WhatsApp's read receipts (blue ticks) to the fake server, to the sender's
 * number or, for a sender known only by LID, to its LID; a repeated call sends nothing new.
 */
import { assert, describe, it as unit, layer } from "@effect/vitest"
import { QrConnection } from "@switchboard/providers"
import { Effect } from "effect"
import { api, eventually } from "./support/Fixtures.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"

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
          const client = yield* api(user.accessToken, user.workspaceId)
          const inbound = (n: number) =>
            eventually(
              client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId } }),
              (page) => page.data.length === n
            ).pipe(Effect.map((page) => page.data))
          const [latest] = yield* inbound(2)
          assert.deepStrictEqual(contact.readReceipts, [], "nothing is read before the business reads it")

          const path = { conversationId: latest!.conversation_id }
          const read = yield* client.conversations.markRead({ path })
          assert.strictEqual(read.unread_count, 0)
          const jid = "4915112340055@s.whatsapp.net"
          yield* eventually(Effect.sync(() => contact.readReceipts.length), (n) => n >= 2, 30_000)
          assert.sameDeepMembers(contact.readReceipts, ids.map((id) => ({ id, to: jid })))

          // again: nothing is unread, so nothing is sent
          const again = yield* client.conversations.markRead({ path })
          assert.strictEqual(again.unread_count, 0)

          // a sender known only by its LID gets its receipt at its LID (one message route); the
          // link carries stanzas in order, so once it arrives nothing more came for the first contact
          const hidden = wa.contact("+4915112340056")
          const hiddenId = yield* hidden.says("who am I", { addressing: "lid" })
          const lidMessage = (yield* inbound(3)).find((m) => m.text.body === "who am I")!
          const one = yield* client.messages.markRead({ path: { messageId: lidMessage.id } })
          assert.isNotNull(one.read_at)
          yield* eventually(Effect.sync(() => hidden.readReceipts.length), (n) => n >= 1, 30_000)
          assert.deepStrictEqual(hidden.readReceipts, [{ id: hiddenId, to: `${hidden.lidUser}@lid` }])
          assert.strictEqual(contact.readReceipts.length, 2, JSON.stringify(contact.readReceipts))
        }),
      180_000
    )
  })
})
