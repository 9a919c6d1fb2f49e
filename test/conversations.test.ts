import { assert, describe, layer } from "@effect/vitest"
import { Pagination } from "@switchboard/domain"
import { Effect, Schema } from "effect"
import { eventsOf, inbound, OTHER, thread, TO } from "./support/Conversations.js"
import { api, createKey, refused, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const UNKNOWN_CONVERSATION = "cnv_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"
/** The typed client takes the position a `next_cursor` stands for. */
const cursor = (next: string | null) => Schema.decodeSync(Pagination.Cursor)(next!)
const UNKNOWN_CHANNEL = "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"

describe("conversations", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("lists conversations with the contact inline, filtered and paginated; unknown values are refused", () =>
      Effect.gen(function*() {
        const { client, conversationId, key, sent, session } = yield* thread
        const second = yield* client.messages.send({ payload: { to: OTHER, text: { body: "hi" } }, headers: {} })
        assert.notStrictEqual(second.conversation_id, conversationId)
        const all = yield* client.conversations.list({ urlParams: {} })
        assert.deepStrictEqual(all.data.map((c) => c.id), [second.conversation_id, conversationId])
        const first = all.data[1]!
        assert.strictEqual(first.object, "conversation")
        assert.strictEqual(first.status, "open")
        assert.strictEqual(first.channel_id, session.channel_id)
        assert.deepStrictEqual(first.contact, {
          id: sent.contact_id!,
          object: "contact",
          phone_number: TO,
          whatsapp_lid: null,
          name: null
        })
        assert.strictEqual(first.last_message_at, sent.created_at)
        assert.isNull(first.last_inbound_at)
        assert.isNull(first.assignee_id)
        assert.strictEqual(first.unread_count, 0)
        const byContact = yield* client.conversations.list({ urlParams: { contact_id: sent.contact_id! } })
        assert.deepStrictEqual(byContact.data.map((c) => c.id), [conversationId])
        const byChannel = yield* client.conversations.list({ urlParams: { channel_id: session.channel_id } })
        assert.strictEqual(byChannel.data.length, 2)
        assert.strictEqual((yield* client.conversations.list({ urlParams: { status: "closed" } })).data.length, 0)
        assert.strictEqual((yield* client.conversations.list({ urlParams: { assignee_id: "none" } })).data.length, 2)
        const page1 = yield* client.conversations.list({ urlParams: { limit: 1 } })
        assert.isTrue(page1.page.has_more)
        const page2 = yield* client.conversations.list({
          urlParams: { limit: 1, after: cursor(page1.page.next_cursor) }
        })
        assert.deepStrictEqual(page2.data.map((c) => c.id), [conversationId])
        assert.isFalse(page2.page.has_more)
        for (const query of ["status=archived", "assignee_id=someone", "contact_id=cnt_1", "limit=0"]) {
          // raw: filter values the typed client would not send
          const bad = yield* request("GET", `/v1/conversations?${query}`, { token: key })
          assert.strictEqual(bad.status, 422, query)
          assert.strictEqual(bad.body.error.code, "VALIDATION_ERROR")
        }
        const unknownChannel = yield* refused(
          client.conversations.list({ urlParams: { channel_id: UNKNOWN_CHANNEL } })
        )
        assert.strictEqual(unknownChannel.code, "CHANNEL_NOT_FOUND")
        const got = yield* client.conversations.get({ path: { conversationId } })
        // the same conversation; its last message's status moves on meanwhile (the simulated network)
        assert.deepStrictEqual({ ...got, last_message: null }, { ...first, last_message: null })
        assert.strictEqual(got.last_message?.id, sent.id)
        const missing = yield* refused(client.conversations.get({ path: { conversationId: UNKNOWN_CONVERSATION } }))
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(missing.details["resource"], "conversation")
        // another workspace's conversation is unknown here
        const stranger = yield* createKey(yield* signUp())
        const foreign = yield* refused((yield* api(stranger.secret)).conversations.get({ path: { conversationId } }))
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual(foreign.details["resource"], "conversation")
      }))

    it.effect("carries the thread's newest message, either direction, on every read and change", () =>
      Effect.gen(function*() {
        const { client, conversationId, key, sent, session } = yield* thread
        const listed = () =>
          Effect.map(client.conversations.list({ urlParams: {} }), (p) => p.data.find((c) => c.id === conversationId)!)
        const before = yield* listed()
        assert.strictEqual(before.last_message?.id, sent.id)
        assert.strictEqual(before.last_message?.direction, "outbound")
        assert.strictEqual(before.last_message?.text.body, "hello")
        assert.strictEqual(before.last_message?.object, "message")
        yield* inbound(key, session.id, TO, "Are you open on Sunday?")
        const after = yield* listed()
        assert.strictEqual(after.last_message?.direction, "inbound")
        assert.strictEqual(after.last_message?.text.body, "Are you open on Sunday?")
        assert.strictEqual(after.last_message?.from, TO)
        assert.strictEqual(after.last_message?.conversation_id, conversationId)
        const newest = after.last_message!.id
        // the same on a single read, a change and the read marker
        assert.strictEqual((yield* client.conversations.get({ path: { conversationId } })).last_message?.id, newest)
        const closed = yield* client.conversations.update({ path: { conversationId }, payload: { status: "closed" } })
        assert.strictEqual(closed.last_message?.id, newest)
        assert.strictEqual(
          (yield* client.conversations.markRead({ path: { conversationId } })).last_message?.id,
          newest
        )
        // a conversation's last message is its own: the other thread's stays the other's
        const other = yield* client.messages.send({ payload: { to: OTHER, text: { body: "hi" } }, headers: {} })
        const both = yield* client.conversations.list({ urlParams: {} })
        assert.deepStrictEqual(
          both.data.map((c) => [c.id, c.last_message?.id]),
          [[other.conversation_id, other.id], [conversationId, newest]]
        )
      }))

    it.effect("closes and reopens by PATCH with exactly one event per change and none for no change", () =>
      Effect.gen(function*() {
        const { client, conversationId, key } = yield* thread
        const path = { conversationId }
        const closed = yield* client.conversations.update({ path, payload: { status: "closed" } })
        assert.strictEqual(closed.status, "closed")
        const again = yield* client.conversations.update({ path, payload: { status: "closed" } })
        assert.strictEqual(again.updated_at, closed.updated_at)
        const reopened = yield* client.conversations.update({ path, payload: { status: "open" } })
        assert.strictEqual(reopened.status, "open")
        const events = yield* eventsOf(conversationId)
        assert.deepStrictEqual(events.map((e) => e.type), [
          "conversation.created",
          "conversation.closed",
          "conversation.reopened"
        ])
        assert.strictEqual(events[2]!.data.reason, "request")
        assert.strictEqual(events[1]!.data.status, "closed")
        for (const body of [{}, { status: "snoozed" }, { status: "closed", colour: "red" }]) {
          // raw: malformed patches the typed client would not send
          const bad = yield* request("PATCH", `/v1/conversations/${conversationId}`, { token: key, body })
          assert.strictEqual(bad.status, 422, JSON.stringify(body))
        }
        assert.strictEqual((yield* eventsOf(conversationId)).length, 3)
      }))

    it.effect("assigns members of the workspace only, reporting from and to", () =>
      Effect.gen(function*() {
        const { client, conversationId, user } = yield* thread
        const path = { conversationId }
        const outsider = yield* signUp()
        const refusal = yield* refused(
          client.conversations.update({ path, payload: { assignee_id: outsider.userId as `usr_${string}` } })
        )
        assert.strictEqual(refusal.status, 422)
        assert.strictEqual(refusal.details["reason"], "assignee_not_member")
        assert.notInclude(JSON.stringify(refusal), outsider.userId)
        const me = user.userId as `usr_${string}`
        const assigned = yield* client.conversations.update({ path, payload: { assignee_id: me } })
        assert.strictEqual(assigned.assignee_id, me)
        yield* client.conversations.update({ path, payload: { assignee_id: me } })
        const mine = yield* client.conversations.list({ urlParams: { assignee_id: me } })
        assert.deepStrictEqual(mine.data.map((c) => c.id), [conversationId])
        const both = yield* client.conversations.update({ path, payload: { assignee_id: null, status: "closed" } })
        assert.isNull(both.assignee_id)
        const events = (yield* eventsOf(conversationId)).filter((e) => e.type !== "conversation.created")
        assert.deepStrictEqual(events.map((e) => e.type), [
          "conversation.assigned",
          "conversation.closed",
          "conversation.assigned"
        ])
        assert.include(events[0]!.data, { from_assignee_id: null, to_assignee_id: me, assignee_id: me })
        assert.include(events[2]!.data, { from_assignee_id: me, to_assignee_id: null, assignee_id: null })
      }))

    it.effect("reopens the same conversation when the contact writes after a close (sandbox inbound)", () =>
      Effect.gen(function*() {
        const { client, conversationId, key, session } = yield* thread
        yield* client.conversations.update({ path: { conversationId }, payload: { status: "closed" } })
        yield* inbound(key, session.id, TO, "are you there?")
        const conversation = yield* client.conversations.get({ path: { conversationId } })
        assert.strictEqual(conversation.status, "open")
        assert.isString(conversation.last_inbound_at)
        const all = yield* client.conversations.list({ urlParams: { contact_id: conversation.contact_id! } })
        assert.deepStrictEqual(all.data.map((c) => c.id), [conversationId])
        const reopened = (yield* eventsOf(conversationId)).filter((e) => e.type === "conversation.reopened")
        assert.strictEqual(reopened.length, 1)
        assert.strictEqual(reopened[0]!.data.reason, "inbound_message")
        const threadPage = yield* client.conversations.messages({ path: { conversationId }, urlParams: {} })
        assert.deepStrictEqual(threadPage.data.map((m) => m.direction), ["inbound", "outbound"])
      }))

    it.effect("replies through the send path, idempotently, reopening a closed conversation", () =>
      Effect.gen(function*() {
        const { client, conversationId, key, sent } = yield* thread
        const path = { conversationId }
        yield* client.conversations.update({ path, payload: { status: "closed" } })
        const [reply, response] = yield* client.conversations.reply({
          path,
          payload: { text: { body: "we are" } },
          headers: { "idempotency-key": "reply-1" },
          withResponse: true
        })
        assert.strictEqual(response.status, 201)
        assert.strictEqual(reply.status, "queued")
        assert.strictEqual(reply.to, TO)
        assert.strictEqual(reply.channel_id, sent.channel_id)
        assert.strictEqual(reply.conversation_id, conversationId)
        const [replayed, replay] = yield* client.conversations.reply({
          path,
          payload: { text: { body: "we are" } },
          headers: { "idempotency-key": "reply-1" },
          withResponse: true
        })
        assert.strictEqual(replayed.id, reply.id)
        assert.strictEqual(replay.headers["idempotent-replay"], "true")
        const conflict = yield* refused(client.conversations.reply({
          path,
          payload: { text: { body: "something else" } },
          headers: { "idempotency-key": "reply-1" }
        }))
        assert.strictEqual(conflict.code, "IDEMPOTENCY_CONFLICT")
        assert.strictEqual((yield* client.conversations.get({ path })).status, "open")
        const reopened = (yield* eventsOf(conversationId)).filter((e) => e.type === "conversation.reopened")
        assert.deepStrictEqual(reopened.map((e) => e.data.reason), ["outbound_message"])
        const page = yield* client.conversations.messages({ path, urlParams: { limit: 1 } })
        assert.deepStrictEqual(page.data.map((m) => m.id), [reply.id])
        assert.isTrue(page.page.has_more)
        const rest = yield* client.conversations.messages({ path, urlParams: { after: cursor(page.page.next_cursor) } })
        assert.deepStrictEqual(rest.data.map((m) => m.id), [sent.id])
        // raw: a reply naming `to` is a body the typed client would not send
        const withTo = yield* request("POST", `/v1/conversations/${conversationId}/messages`, {
          token: key,
          body: { to: TO, text: { body: "x" } }
        })
        assert.strictEqual(withTo.status, 422)
        const missing = yield* refused(client.conversations.reply({
          path: { conversationId: UNKNOWN_CONVERSATION },
          payload: { text: { body: "x" } },
          headers: {}
        }))
        assert.strictEqual(missing.status, 404)
      }))

    it.effect("keeps a conversation readable after its contact is deleted; a reply then is a 409", () =>
      Effect.gen(function*() {
        const { client, conversationId, sent } = yield* thread
        const [, deleted] = yield* client.contacts.delete({ path: { contactId: sent.contact_id! }, withResponse: true })
        assert.isBelow(deleted.status, 300)
        const read = yield* client.conversations.get({ path: { conversationId } })
        assert.strictEqual(read.contact_id, sent.contact_id)
        assert.isNull(read.contact)
        const listed = yield* client.conversations.list({ urlParams: {} })
        assert.include(listed.data.map((c) => c.id), conversationId)
        const replied = yield* refused(client.conversations.reply({
          path: { conversationId },
          payload: { text: { body: "still there?" } },
          headers: {}
        }))
        assert.strictEqual(replied.status, 409)
        assert.strictEqual(replied.code, "CONFLICT")
        assert.strictEqual(replied.details["reason"], "contact_deleted")
      }))

    it.effect("counts inbound messages after the read marker, which only POST /read moves", () =>
      Effect.gen(function*() {
        const { client, conversationId, key, session } = yield* thread
        const path = { conversationId }
        yield* inbound(key, session.id, TO, "one")
        yield* inbound(key, session.id, TO, "two")
        yield* client.conversations.reply({ path, payload: { text: { body: "outbound" } }, headers: {} })
        assert.strictEqual((yield* client.conversations.get({ path })).unread_count, 2)
        const read = yield* client.conversations.markRead({ path })
        assert.strictEqual(read.unread_count, 0)
        assert.strictEqual(read.last_read_at, read.last_inbound_at)
        const readAgain = yield* client.conversations.markRead({ path })
        assert.strictEqual(readAgain.updated_at, read.updated_at)
        yield* client.conversations.update({ path, payload: { status: "closed" } })
        assert.strictEqual((yield* client.conversations.get({ path })).unread_count, 0)
        yield* inbound(key, session.id, TO, "three")
        const after = yield* client.conversations.get({ path })
        assert.strictEqual(after.unread_count, 1)
        assert.strictEqual(after.last_read_at, read.last_read_at)
        const updated = (yield* eventsOf(conversationId)).filter((e) => e.type === "conversation.updated")
        assert.deepStrictEqual(updated.map((e) => e.data.changed), [["last_read_at"]])
      }))

    it.effect("keeps notes internal, with the user or the API key as author", () =>
      Effect.gen(function*() {
        const { client, conversationId, key, user } = yield* thread
        const path = { conversationId }
        const byKey = yield* client.conversations.addNote({ path, payload: { body: "VIP customer" } })
        assert.strictEqual(byKey.object, "conversation_note")
        assert.strictEqual(byKey.author.type, "api_key")
        assert.match(byKey.author.id, /^key_/)
        const asUser = yield* api(user.accessToken, user.workspaceId)
        const byUser = yield* asUser.conversations.addNote({ path, payload: { body: "called them" } })
        assert.deepStrictEqual(byUser.author, { type: "user", id: user.userId })
        const listed = yield* client.conversations.notes({ path, urlParams: {} })
        assert.deepStrictEqual(listed.data.map((n) => n.body), ["called them", "VIP customer"])
        for (const body of ["", "x".repeat(4097)]) {
          // raw: an empty note and one over 4096 characters are bodies the typed client would not send
          const bad = yield* request("POST", `/v1/conversations/${conversationId}/notes`, {
            token: key,
            body: { body }
          })
          assert.strictEqual(bad.status, 422)
        }
        const noted = (yield* eventsOf(conversationId)).filter((e) => e.type === "conversation.note_added")
        assert.deepStrictEqual(noted.map((e) => e.data.note_id), [byKey.id, byUser.id])
        assert.include(noted[1]!.data, { author_type: "user", author_id: user.userId })
        const threadPage = yield* client.conversations.messages({ path, urlParams: {} })
        assert.strictEqual(threadPage.data.length, 1)
      }))
  })
})
