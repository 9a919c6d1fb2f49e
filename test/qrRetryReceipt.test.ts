/**
 * A contact's phone that cannot decrypt our message (a lost or broken session) answers with a
 * `retry` receipt and fresh keys, as WhatsApp's apps do; the QR channel (Baileys, from its cache
 * of recent sends) builds a new session from those keys and sends the same message again, so the
 * contact gets it once, under the same id, and it is walked to `read` like any other.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, eventually } from "./support/Fixtures.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"

describe("QR retry receipts", () => {
  layer(appWith({ phoneNumber: "+15550006464" }), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped("a message the phone could not decrypt is sent again with a new session and read", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel()
        const client = yield* api(user.accessToken, user.workspaceId)
        const contact = wa.contact("+4915112340064")
        yield* contact.says("hi, is anyone there?")
        yield* eventually(
          client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId } }),
          (page) => page.data.length === 1
        )

        contact.failDecrypts(1)
        const before = contact.received.length
        const sent = yield* client.messages.send({
          payload: { channel_id: channelId, to: contact.number, text: { body: "Yes, how can we help?" } },
          headers: {}
        })
        const received = yield* contact.nextReceived(before).pipe(
          Effect.timeout("60 seconds"),
          Effect.catchAll(() => Effect.dieMessage(`never received: ${contact.deliveryReport(sent.id)}`))
        )
        assert.strictEqual(received.id, sent.id)
        assert.strictEqual(received.text, "Yes, how can we help?")
        // the first stanza failed on the phone, which asked once; the second is the one it shows
        assert.deepStrictEqual(contact.retryReceipts, [sent.id])
        assert.strictEqual(contact.chat.filter((c) => c.stanza === "message" && c.id === sent.id).length, 2)
        assert.strictEqual(contact.received.filter((m) => m.id === sent.id).length, 1)

        const read = yield* eventually(
          client.messages.get({ path: { messageId: sent.id } }),
          (m) => m.status === "read",
          30_000
        )
        assert.strictEqual(read.status, "read", JSON.stringify(read))
      }))
  })
})
