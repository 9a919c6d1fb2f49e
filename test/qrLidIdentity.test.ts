/**
 * One contact per person on a QR channel (docs/QR-CHANNELS.md "Who sent it"): a contact we wrote to
 * by number who answers by LID alone (no `sender_pn`) lands on the number's contact and
 * conversation, because the link's own LID store learnt the mapping during our send; it still does
 * after the link reconnected (a new socket reads the stored `lid-mapping` keys), and a sender whose
 * message names both forms (`remoteJidAlt`) or whose number WhatsApp reveals later
 * (`lid-mapping.update`) is one contact too.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, eventually, type SignedUp } from "./support/Fixtures.js"
import { appWith, pairedChannel, sendText, Wa, waitForStatus } from "./support/QrApp.js"

/** Contacts, conversations and inbound messages of the user's workspace, once `inbound` messages are in. */
const workspace = (user: SignedUp, channelId: `ch_${string}`, inbound: number) =>
  Effect.gen(function*() {
    const client = yield* api(user.accessToken, user.workspaceId)
    const messages = yield* eventually(
      client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId, limit: 100 } }),
      (page) => page.data.length >= inbound,
      30_000
    )
    const contacts = yield* client.contacts.list({ urlParams: {} })
    const conversations = yield* client.conversations.list({ urlParams: {} })
    return { messages: messages.data, contacts: contacts.data, conversations: conversations.data }
  })

describe("a reply by LID does not open a second contact", () => {
  layer(appWith({ phoneNumber: "+15550007373" }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("a contact we wrote to answers by LID alone: one contact, one conversation, its number shown", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Send first")
        const contact = wa.contact("+4915112349009")
        yield* sendText(user, channelId, contact, "Your order shipped")
        yield* contact.says("thanks!", { addressing: "lid" })
        const seen = yield* workspace(user, channelId, 1)
        const reply = seen.messages[0]!
        assert.strictEqual(reply.from, contact.number, JSON.stringify(reply))
        assert.deepStrictEqual(reply.sender, { phone_number: contact.number, whatsapp_lid: contact.lidUser })
        assert.strictEqual(seen.contacts.length, 1, JSON.stringify(seen.contacts))
        assert.strictEqual(seen.contacts[0]!.phone_number, contact.number)
        assert.strictEqual(seen.contacts[0]!.whatsapp_lid, contact.lidUser)
        assert.strictEqual(seen.conversations.length, 1, JSON.stringify(seen.conversations))
        assert.strictEqual(reply.conversation_id, seen.conversations[0]!.id)
      }))

    it.scoped("the mapping learnt during our send outlives a reconnect (read from the stored key store)", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Reconnect")
        const contact = wa.contact("+4915112349010")
        yield* sendText(user, channelId, contact, "We will call you")
        const logins = wa.stats.logins
        wa.dropConnections()
        yield* wa.until(() => wa.stats.logins > logins && wa.companionOnline)
        yield* waitForStatus(user, channelId, "connected")
        yield* contact.says("ok, call me", { addressing: "lid" })
        const seen = yield* workspace(user, channelId, 1)
        assert.strictEqual(seen.messages[0]!.from, contact.number, JSON.stringify(seen.messages))
        assert.strictEqual(seen.contacts.length, 1, JSON.stringify(seen.contacts))
        assert.strictEqual(seen.conversations.length, 1, JSON.stringify(seen.conversations))
      }))

    it.scoped("a message naming both forms, then one by LID alone: one contact", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Alt")
        const contact = wa.contact("+4915112349011")
        yield* contact.says("hello", { addressing: "lid+pn" })
        yield* workspace(user, channelId, 1)
        yield* contact.says("me again", { addressing: "lid" })
        const seen = yield* workspace(user, channelId, 2)
        assert.deepStrictEqual(seen.messages.map((m) => m.from), [contact.number, contact.number])
        assert.strictEqual(seen.contacts.length, 1, JSON.stringify(seen.contacts))
        assert.strictEqual(seen.conversations.length, 1, JSON.stringify(seen.conversations))
      }))
  })
})
