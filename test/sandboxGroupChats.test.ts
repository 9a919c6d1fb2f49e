/**
 * Group chats in the sandbox (docs/API.md "Group chats"), over HTTP: a simulated group chat of the
 * session's number and verified recipients; participants write in it over the sandbox inbound route
 * (recorded in the group chat's own conversation, the participant as sender, `mentions`,
 * `message.received` with `group_chat_id`, never in a 1:1 conversation); sends to it and replies in
 * its conversation walk to read; an announce-only group chat, and one the number was removed from,
 * refuse sends (409 with their reasons).
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { api, eventually, refused, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const ALICE = "+4915112340501"
const BOB = "+4915112340502"

/** The `data` of the events about `objectId` of `type`, oldest first. */
const eventsOf = (objectId: string, type: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ envelope: string }>`SELECT envelope FROM events
      WHERE object_id = ${objectId} AND type = ${type} ORDER BY created_at, id`
    return rows.map((r) => JSON.parse(r.envelope).data as Record<string, unknown>)
  }).pipe(Effect.orDie)

describe("sandbox group chats", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("participants write in a simulated group chat; it is recorded in the group chat's conversation", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([ALICE, BOB])
        const client = yield* api(key)
        const chat = yield* client.sandbox.createGroupChat({
          path: { sessionId: session.id },
          payload: { subject: "Team", participants: [ALICE, BOB], admins: [ALICE] }
        })
        assert.deepInclude(chat, {
          object: "group_chat",
          channel_id: session.channel_id,
          subject: "Team",
          participant_count: 2,
          is_admin: false,
          announce_only: false,
          is_participant: true
        })
        assert.deepStrictEqual(chat.participants.map((p) => [p.phone_number, p.role]), [
          [ALICE, "superadmin"],
          [BOB, "member"]
        ])
        const listed = yield* client.groupChats.list({ path: { channelId: session.channel_id }, urlParams: {} })
        assert.deepStrictEqual(listed.data.map((g) => g.id), [chat.id])
        const [alice, bob] = chat.participants.map((p) => p.contact_id!)

        yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: ALICE, group_chat_id: chat.id, text: { body: "@bob the order?" }, mentions: [BOB] }
        })
        yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: ALICE, text: { body: "hi" } }
        })
        const page = yield* eventually(
          client.messages.list({ urlParams: { direction: "inbound", channel_id: session.channel_id } }),
          (p) => p.data.length === 2
        )
        const inGroup = page.data.find((m) => m.group_chat_id !== undefined)!
        const direct = page.data.find((m) => m.group_chat_id === undefined)!
        assert.deepInclude(inGroup, {
          group_chat_id: chat.id,
          contact_id: alice,
          from: ALICE,
          mentions: [bob],
          text: { body: "@bob the order?" }
        })
        assert.deepInclude(direct, { contact_id: alice, text: { body: "hi" } })
        assert.notStrictEqual(direct.conversation_id, inGroup.conversation_id)
        const conversation = yield* client.conversations.get({ path: { conversationId: inGroup.conversation_id } })
        assert.deepInclude(conversation, { group_chat_id: chat.id, contact_id: null, contact: null })
        // the 1:1 conversation shows the direct message only
        const privately = yield* client.conversations.messages({
          path: { conversationId: direct.conversation_id },
          urlParams: {}
        })
        assert.deepStrictEqual(privately.data.map((m) => m.text.body), ["hi"])
        const received = yield* eventsOf(inGroup.id, "message.received")
        assert.deepStrictEqual(received.map((d) => [d["group_chat_id"], d["contact_id"]]), [[chat.id, alice]])

        // notes, assignment and close work as for a 1:1 conversation
        yield* client.conversations.addNote({
          path: { conversationId: inGroup.conversation_id },
          payload: { body: "Bob handles orders" }
        })
        const closed = yield* client.conversations.update({
          path: { conversationId: inGroup.conversation_id },
          payload: { status: "closed" }
        })
        assert.strictEqual(closed.status, "closed")
        const closedEvents = yield* eventsOf(inGroup.conversation_id, "conversation.closed")
        assert.deepStrictEqual(closedEvents.map((d) => [d["group_chat_id"], d["contact_id"]]), [[chat.id, null]])

        // a participant's message reopens it; a number not in the group chat cannot write in it
        const stranger = yield* refused(client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: "+4915112340503", group_chat_id: chat.id, text: { body: "let me in" } }
        }))
        assert.strictEqual(stranger.status, 422)
        yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: BOB, group_chat_id: chat.id, text: { body: "on it" } }
        })
        const reopened = yield* eventually(
          client.conversations.get({ path: { conversationId: inGroup.conversation_id } }),
          (c) => c.status === "open"
        )
        assert.strictEqual(reopened.status, "open")
      }))

    it.effect("keeps a participant whose contact was deleted in the group chat, without a contact", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([ALICE, BOB])
        const client = yield* api(key)
        const chat = yield* client.sandbox.createGroupChat({
          path: { sessionId: session.id },
          payload: { subject: "Seats", participants: [ALICE, BOB], admins: [ALICE] }
        })
        const bob = chat.participants.find((p) => p.phone_number === BOB)!.contact_id!
        yield* client.contacts.delete({ path: { contactId: bob } })
        const gone = yield* refused(client.contacts.get({ path: { contactId: bob } }))
        assert.strictEqual(gone.status, 404)
        const kept = yield* client.groupChats.get({ path: { groupChatId: chat.id } })
        assert.strictEqual(kept.participant_count, 2)
        assert.deepStrictEqual(kept.participants[1], {
          contact_id: null,
          phone_number: BOB,
          whatsapp_lid: null,
          role: "member"
        })
        assert.deepStrictEqual(kept.participants[0], chat.participants[0])
        // still a participant: the number writes in the group chat, as a new contact
        yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: BOB, group_chat_id: chat.id, text: { body: "still here" } }
        })
        const [message] = yield* eventually(
          Effect.map(client.messages.list({ urlParams: { direction: "inbound" } }), (p) => p.data),
          (all) => all.length === 1
        )
        assert.isString(message!.contact_id)
        assert.notStrictEqual(message!.contact_id, bob)
        // and its seat names that new contact
        const reseated = yield* client.groupChats.get({ path: { groupChatId: chat.id } })
        assert.strictEqual(reseated.participants[1]!.contact_id, message!.contact_id)
        assert.strictEqual(reseated.participant_count, 2)
      }))

    it.effect("leaves participants only a group chat brought in out of the contacts limit, until a 1:1 conversation", () =>
      Effect.gen(function*() {
        const { key, session, user } = yield* sandboxSetup([ALICE, BOB])
        const client = yield* api(key)
        const used = Effect.map(client.plan.usage(), (u) => u.current.contacts.used)
        yield* client.sandbox.createGroupChat({
          path: { sessionId: session.id },
          payload: { subject: "Big", participants: [ALICE, BOB] }
        })
        // contacts like any other, but not counted
        assert.strictEqual((yield* client.contacts.list({ urlParams: {} })).data.length, 2)
        assert.strictEqual(yield* used, 0)
        // a limit of one: a contact of your own still fits
        yield* Effect.flatMap(Operator.Operator, (o) => o.override(user.workspaceId, "contacts", 1)).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        yield* client.contacts.create({ payload: { phone_number: "+4915112340509" } })
        assert.strictEqual(yield* used, 1)
        // a send to a participant opens its 1:1 conversation: it needs room, like a new number
        const over = yield* refused(client.messages.send({ payload: { to: ALICE, text: { body: "hi" } }, headers: {} }))
        assert.strictEqual(over.status, 409)
        assert.strictEqual(over.code, "ENTITLEMENT_LIMIT_REACHED")
        assert.deepStrictEqual((yield* client.messages.list({ urlParams: {} })).data, [])
        // a participant who writes 1:1 counts from then on (an inbound message is never refused)
        yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: BOB, text: { body: "hello" } }
        })
        assert.strictEqual(yield* eventually(used, (n) => n === 2), 2)
      }))

    it.effect("sends to a simulated group chat and replies in its conversation, each walked to read", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([ALICE, BOB])
        const client = yield* api(key)
        const chat = yield* client.sandbox.createGroupChat({
          path: { sessionId: session.id },
          payload: { subject: "Orders", participants: [ALICE, BOB] }
        })
        const sent = yield* client.messages.send({
          payload: { group_chat_id: chat.id, text: { body: "Order 42 is ready" } },
          headers: {}
        })
        assert.deepInclude(sent, { group_chat_id: chat.id, contact_id: null, channel_id: session.channel_id })
        // the send made the group chat's conversation: its event names the group chat, no contact
        const created = yield* eventsOf(sent.conversation_id, "conversation.created")
        assert.deepStrictEqual(created.map((d) => [d["group_chat_id"], d["contact_id"]]), [[chat.id, null]])
        const read = yield* eventually(
          client.messages.get({ path: { messageId: sent.id } }),
          (m) => m.status === "read"
        )
        assert.strictEqual(read.status, "read")

        yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: BOB, group_chat_id: chat.id, text: { body: "which table?" }, reply_to: sent.id }
        })
        const asked = yield* eventually(
          client.messages.list({ urlParams: { direction: "inbound", channel_id: session.channel_id } }),
          (p) => p.data.length === 1
        )
        const question = asked.data[0]!
        assert.deepInclude(question, { conversation_id: sent.conversation_id, context: { reply_to: sent.id } })
        const reply = yield* client.conversations.reply({
          path: { conversationId: sent.conversation_id },
          payload: { text: { body: "Table 7" }, reply_to: question.id },
          headers: {}
        })
        assert.deepInclude(reply, { group_chat_id: chat.id, conversation_id: sent.conversation_id })
        const replyRead = yield* eventually(
          client.messages.get({ path: { messageId: reply.id } }),
          (m) => m.status === "read"
        )
        assert.strictEqual(replyRead.status, "read")
        // the same Idempotency-Key answers the same message
        const again = (body: string) =>
          client.messages.send({
            payload: { group_chat_id: chat.id, text: { body } },
            headers: { "idempotency-key": "group-send-1" }
          })
        const first = yield* again("once")
        const second = yield* again("once")
        assert.strictEqual(second.id, first.id)
      }))

    it.effect("refuses sends to an announce-only group chat and to one the number was removed from", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([ALICE, BOB])
        const client = yield* api(key)
        const news = yield* client.sandbox.createGroupChat({
          path: { sessionId: session.id },
          payload: { subject: "News", participants: [ALICE, BOB], announce_only: true }
        })
        const send = (groupChatId: `gch_${string}`) =>
          refused(client.messages.send({ payload: { group_chat_id: groupChatId, text: { body: "hi" } }, headers: {} }))
        const onlyAdmins = yield* send(news.id)
        assert.deepStrictEqual(
          [onlyAdmins.status, onlyAdmins.code, onlyAdmins.details["reason"]],
          [409, "CHANNEL_CAPABILITY_UNAVAILABLE", "group_chat_announce_only"]
        )
        // a member may not write there either; the creator (an admin) may
        const member = yield* refused(client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: BOB, group_chat_id: news.id, text: { body: "hello?" } }
        }))
        assert.deepStrictEqual([member.status, member.details["reason"]], [422, "group_chat_announce_only"])
        yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: ALICE, group_chat_id: news.id, text: { body: "News!" } }
        })
        // an admin number writes in it
        const admin = yield* client.sandbox.createGroupChat({
          path: { sessionId: session.id },
          payload: { subject: "Board", participants: [ALICE], announce_only: true, is_admin: true }
        })
        const allowed = yield* client.messages.send({
          payload: { group_chat_id: admin.id, text: { body: "Board meeting at 5" } },
          headers: {}
        })
        assert.strictEqual(allowed.status, "queued")

        const left = yield* client.sandbox.removeFromGroupChat({
          path: { sessionId: session.id, groupChatId: admin.id }
        })
        assert.deepInclude(left, { is_participant: false, is_admin: false })
        const removed = yield* send(admin.id)
        assert.deepStrictEqual(
          [removed.status, removed.code, removed.details["reason"]],
          [409, "CHANNEL_CAPABILITY_UNAVAILABLE", "not_a_participant"]
        )
        // an unknown group chat, one of another channel, a channel_id that is not the group chat's
        const unknown = yield* send("gch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z")
        assert.deepStrictEqual([unknown.status, unknown.code], [404, "NOT_FOUND"])
        const other = yield* sandboxSetup([ALICE])
        const mismatch = yield* refused(client.messages.send({
          payload: { group_chat_id: news.id, channel_id: other.session.channel_id, text: { body: "hi" } },
          headers: {}
        }))
        assert.deepStrictEqual([mismatch.status, mismatch.details["reason"]], [422, "group_chat_of_another_channel"])
        // an unverified participant is refused
        const unverified = yield* refused(client.sandbox.createGroupChat({
          path: { sessionId: session.id },
          payload: { subject: "Strangers", participants: ["+4915112340599"] }
        }))
        assert.deepStrictEqual([unverified.status, unverified.details["reason"]], [422, "recipient_not_verified"])
      }))
  })
})
