import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ConversationsRepo, Transactions } from "@switchboard/db"
import { verifyWebhook } from "@switchboard/sdk"
import { Deferred, Effect, Layer } from "effect"
import { createHmac } from "node:crypto"
import { eventsOf, inbound, thread, TO } from "./support/Conversations.js"
import { api, createKey } from "./support/Fixtures.js"
import { eventually, receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

describe("conversation events", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("ends races between an inbound message and a close in one consistent state", () =>
      Effect.gen(function*() {
        const { client, conversationId, key, sent, session } = yield* thread
        const path = { conversationId }
        for (let round = 0; round < 8; round++) {
          yield* Effect.all([
            inbound(key, session.id, TO, `race ${round}`),
            client.conversations.update({ path, payload: { status: "closed" } })
          ], { concurrency: "unbounded" })
        }
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ id: string }>`SELECT id FROM conversations
          WHERE channel_id = ${session.channel_id} AND contact_id = ${sent.contact_id}`
        assert.deepStrictEqual(rows.map((r) => r.id), [conversationId])
        const threads = yield* sql<{ conversation_id: string }>`SELECT DISTINCT conversation_id FROM messages
          WHERE contact_id = ${sent.contact_id}`
        assert.deepStrictEqual(threads.map((r) => r.conversation_id), [conversationId])
        // every move reported once, in the order made: closed, reopened, closed, ... ending in the status
        const moves = (yield* eventsOf(conversationId)).filter((e) =>
          e.type === "conversation.closed" || e.type === "conversation.reopened"
        )
        assert.isAbove(moves.length, 0)
        moves.forEach((move, i) => {
          assert.strictEqual(move.type, i % 2 === 0 ? "conversation.closed" : "conversation.reopened", `move ${i}`)
          if (move.type === "conversation.reopened") assert.strictEqual(move.data.reason, "inbound_message")
        })
        const final = yield* client.conversations.get({ path })
        assert.strictEqual(final.status, moves.length % 2 === 1 ? "closed" : "open")
        assert.strictEqual(moves[moves.length - 1]!.data.status, final.status)
      }))

    it.effect("orders a close and a message that overlap by the row lock, whichever takes it first", () =>
      Effect.gen(function*() {
        const { client, conversationId, sent, session } = yield* thread
        const path = { conversationId }
        const repo = yield* ConversationsRepo.ConversationsRepo
        const transactions = yield* Transactions.Transactions
        const at = () => new Date().toISOString()
        const message = transactions.run(
          repo.upsertConversation(sent.workspace_id, session.channel_id, sent.contact_id!, at(), "inbound")
        )
        const close = client.conversations.update({ path, payload: { status: "closed" } })
        // a close holds the lock while a message arrives: the message reopens what the close closed
        // (the repos alone, to hold the transaction open: the close's own event is the service's)
        // each holder says when it has the row: at load a fixed head start was not always enough
        // for it to take the lock first (a CI run saw the close come first)
        const closeHolds = yield* Deferred.make<void>()
        const holdingClose = transactions.run(Effect.gen(function*() {
          yield* repo.update(sent.workspace_id, conversationId, { status: "closed" }, at())
          yield* Deferred.succeed(closeHolds, undefined)
          yield* Effect.sleep("300 millis")
        }))
        yield* Effect.all([holdingClose, Effect.zipRight(Deferred.await(closeHolds), message)], {
          concurrency: "unbounded"
        })
        assert.strictEqual((yield* client.conversations.get({ path })).status, "open")
        const reopened = (yield* eventsOf(conversationId)).filter((e) => e.type === "conversation.reopened")
        assert.deepStrictEqual(reopened.map((e) => e.data.reason), ["inbound_message"])
        // a message holds the lock while a close arrives: the close applies after it
        const messageHolds = yield* Deferred.make<void>()
        const holdingMessage = transactions.run(Effect.gen(function*() {
          yield* repo.upsertConversation(sent.workspace_id, session.channel_id, sent.contact_id!, at(), "inbound")
          yield* Deferred.succeed(messageHolds, undefined)
          yield* Effect.sleep("300 millis")
        }))
        yield* Effect.all([holdingMessage, Effect.zipRight(Deferred.await(messageHolds), close)], {
          concurrency: "unbounded"
        })
        assert.strictEqual((yield* client.conversations.get({ path })).status, "closed")
        const moves = (yield* eventsOf(conversationId)).map((e) => e.type).filter((t) => t !== "conversation.created")
        assert.deepStrictEqual(moves, ["conversation.reopened", "conversation.closed"])
      }).pipe(
        Effect.provide(Layer.merge(ConversationsRepo.ConversationsRepo.Default, Transactions.Transactions.Default))
      ))

    it.scoped("delivers conversation events to a webhook receiver, signed like every other event", () =>
      Effect.gen(function*() {
        const sink = yield* receiver()
        const { client, conversationId, key, session, user } = yield* thread
        const admin = yield* createKey(user, { scopes: ["webhooks.manage"] })
        const endpoint = yield* (yield* api(admin.secret)).webhooks.create({
          payload: {
            url: `${sink.url}/conversations`,
            event_types: [
              "conversation.closed",
              "conversation.reopened",
              "conversation.assigned",
              "conversation.note_added"
            ]
          }
        })
        const secret = endpoint.secret
        const path = { conversationId }
        yield* client.conversations.update({
          path,
          payload: { status: "closed", assignee_id: user.userId as `usr_${string}` }
        })
        yield* client.conversations.addNote({ path, payload: { body: "follow up tomorrow" } })
        yield* inbound(key, session.id, TO, "hello again")
        yield* eventually(() => sink.received.length >= 4 || undefined)
        const types = sink.received.map((r) => r.headers["x-webhook-event"]).sort()
        assert.deepStrictEqual(types, [
          "conversation.assigned",
          "conversation.closed",
          "conversation.note_added",
          "conversation.reopened"
        ])
        for (const r of sink.received) {
          assert.isTrue(verifyWebhook(r.body, r.headers as any, secret).valid)
          const expected = createHmac("sha256", secret).update(`${r.headers["x-webhook-timestamp"]}.${r.body}`).digest(
            "hex"
          )
          assert.strictEqual(r.headers["x-webhook-signature"], `v1=${expected}`)
          const envelope = JSON.parse(r.body)
          assert.strictEqual(envelope.type, r.headers["x-webhook-event"])
          assert.strictEqual(envelope.id, r.headers["x-webhook-event-id"])
          assert.strictEqual(envelope.workspace_id, user.workspaceId)
          assert.include(envelope.data, {
            object: "conversation",
            object_id: conversationId,
            conversation_id: conversationId,
            channel_id: session.channel_id
          })
        }
        const reopened = JSON.parse(
          sink.received.find((r) => r.headers["x-webhook-event"] === "conversation.reopened")!
            .body
        )
        assert.strictEqual(reopened.data.reason, "inbound_message")
        assert.strictEqual(reopened.data.status, "open")
      }))
  })
})
