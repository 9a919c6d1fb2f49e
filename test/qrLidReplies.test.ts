/**
 * Replies to a contact WhatsApp named by LID alone (docs/API.md "Contacts"): on a QR channel the
 * conversation reply goes to the LID through the real Baileys client, the fake contact receives it
 * addressed to its LID (a quoted reply and a file too), and it walks to delivered and read. A
 * channel that cannot address a LID (the sandbox) refuses with 409 `contact_without_phone_number`.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { thread } from "./support/Conversations.js"
import { api, eventually, refused } from "./support/Fixtures.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"
import * as TestApp from "./support/TestApp.js"

describe("replies to a contact known only by its LID", () => {
  layer(appWith({ phoneNumber: "+15550009393" }), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped("a QR channel's conversation reply goes to the LID and is delivered", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel()
        const hidden = wa.contact("+4915112340393")
        const theirs = yield* hidden.says("who am I", { addressing: "lid" })
        const client = yield* api(user.accessToken, user.workspaceId)
        const inbound = yield* eventually(
          client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId } }),
          (page) => page.data.length === 1
        )
        const message = inbound.data[0]!
        assert.isNull(message.from)
        const conversationId = message.conversation_id
        const conversation = yield* client.conversations.get({ path: { conversationId } })
        assert.isNotNull(conversation.contact)
        assert.isNull(conversation.contact?.phone_number)
        assert.strictEqual(conversation.contact?.whatsapp_lid, hidden.lidUser)

        const lidJid = `${hidden.lidUser}@lid`
        const reply = (payload: Parameters<typeof client.conversations.reply>[0]["payload"]) =>
          Effect.gen(function*() {
            const before = hidden.received.length
            const sent = yield* client.conversations.reply({ path: { conversationId }, payload, headers: {} })
            assert.strictEqual(sent.to, lidJid)
            assert.strictEqual(sent.conversation_id, conversationId)
            const received = yield* hidden.nextReceived(before).pipe(
              Effect.timeout("60 seconds"),
              Effect.catchAll(() =>
                Effect.flatMap(
                  client.messages.get({ path: { messageId: sent.id } }),
                  (m) =>
                    Effect.dieMessage(
                      `the contact never received it (${hidden.deliveryReport(sent.id)}): ${JSON.stringify(m)}`
                    )
                )
              )
            )
            assert.strictEqual(received.id, sent.id)
            // WhatsApp's address of the contact: its LID, not a number
            assert.strictEqual(received.to, lidJid)
            return { id: sent.id, received }
          })

        const text = yield* reply({ text: { body: "You are our favourite customer" } })
        assert.deepStrictEqual(text.received.kind, { kind: "text", text: "You are our favourite customer" })
        const quoting = yield* reply({ text: { body: "(about this)" }, reply_to: message.id })
        assert.strictEqual(quoting.received.quotedId, theirs)
        const reaction = yield* reply({ reaction: { message_id: message.id, emoji: "❤️" } })
        assert.deepStrictEqual(reaction.received.kind, {
          kind: "reaction",
          targetId: theirs,
          targetFromMe: false,
          emoji: "❤️"
        })

        for (const m of [text, quoting, reaction]) {
          const done = yield* eventually(
            client.messages.get({ path: { messageId: m.id } }),
            (b) => b.status === "read",
            30_000
          )
          assert.strictEqual(done.status, "read", JSON.stringify(done))
          assert.isNotNull(done.delivered_at)
        }
        // still one contact and one conversation: the replies did not make a contact of the LID address
        const contacts = yield* client.contacts.list({ urlParams: {} })
        assert.strictEqual(contacts.data.length, 1, JSON.stringify(contacts.data))
        const conversations = yield* client.conversations.list({ urlParams: {} })
        assert.strictEqual(conversations.data.length, 1, JSON.stringify(conversations.data))
      }), 150_000)
  })

  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a sandbox channel cannot address a LID: 409 contact_without_phone_number, nothing sent", () =>
      Effect.gen(function*() {
        const { client, conversationId, sent } = yield* thread
        const sql = yield* SqlClient.SqlClient
        // a contact WhatsApp named by LID alone (the sandbox's simulated senders always have a number)
        yield* sql`UPDATE contacts SET phone_number = NULL, whatsapp_lid = '123456789012345'
          WHERE id = ${sent.contact_id}`
        const refusal = yield* refused(
          client.conversations.reply({ path: { conversationId }, payload: { text: { body: "hi" } }, headers: {} })
        )
        assert.strictEqual(refusal.status, 409)
        assert.strictEqual(refusal.code, "CONFLICT")
        assert.deepStrictEqual(refusal.details, { reason: "contact_without_phone_number" })
        const page = yield* client.messages.list({ urlParams: { direction: "outbound" } })
        assert.strictEqual(page.data.length, 1)
      }).pipe(Effect.orDie))
  })
})
