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
import { eventually, refused, request } from "./support/Fixtures.js"
import { appWith, as, pairedChannel, Wa } from "./support/QrApp.js"
import * as TestApp from "./support/TestApp.js"

describe("replies to a contact known only by its LID", () => {
  layer(appWith({ phoneNumber: "+15550009393" }), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped("a QR channel's conversation reply goes to the LID and is delivered", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel()
        const hidden = wa.contact("+4915112340393")
        const theirs = yield* hidden.says("who am I", { addressing: "lid" })
        const inbound = yield* eventually(
          request("GET", `/v1/messages?direction=inbound&channel_id=${channelId}`, as(user)),
          (r) => r.body?.data?.length === 1
        )
        const message = inbound.body.data[0]
        assert.isNull(message.from)
        const conversationId: string = message.conversation_id
        const conversation = yield* request("GET", `/v1/conversations/${conversationId}`, as(user))
        assert.isNull(conversation.body.contact.phone_number)
        assert.strictEqual(conversation.body.contact.whatsapp_lid, hidden.lidUser)

        const lidJid = `${hidden.lidUser}@lid`
        const reply = (body: Record<string, unknown>) =>
          Effect.gen(function*() {
            const before = hidden.received.length
            const sent = yield* request("POST", `/v1/conversations/${conversationId}/messages`, { ...as(user), body })
            assert.strictEqual(sent.status, 201, sent.text)
            assert.strictEqual(sent.body.to, lidJid)
            assert.strictEqual(sent.body.conversation_id, conversationId)
            const received = yield* hidden.nextReceived(before).pipe(
              Effect.timeout("60 seconds"),
              Effect.catchAll(() =>
                Effect.flatMap(
                  request("GET", `/v1/messages/${sent.body.id}`, as(user)),
                  (r) => Effect.dieMessage(`the contact never received it: ${r.text}`)
                )
              )
            )
            assert.strictEqual(received.id, sent.body.id)
            // WhatsApp's address of the contact: its LID, not a number
            assert.strictEqual(received.to, lidJid)
            return { id: sent.body.id as string, received }
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
            Effect.map(request("GET", `/v1/messages/${m.id}`, as(user)), (r) => r.body),
            (b) => b.status === "read",
            30_000
          )
          assert.strictEqual(done.status, "read", JSON.stringify(done))
          assert.isNotNull(done.delivered_at)
        }
        // still one contact and one conversation: the replies did not make a contact of the LID address
        const contacts = yield* request("GET", "/v1/contacts", as(user))
        assert.strictEqual(contacts.body.data.length, 1, contacts.text)
        const conversations = yield* request("GET", "/v1/conversations", as(user))
        assert.strictEqual(conversations.body.data.length, 1, conversations.text)
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
