/**
 * Contract gaps: usage and the entitlement check count the same webhook endpoints; a delivery
 * whose endpoint was deleted is not replayed; a long-paused endpoint's held deliveries are gone
 * with the delivery retention; a suspended workspace's channels hold their queue.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ContactsRepo, ConversationsRepo, MessagesRepo } from "@switchboard/db"
import { Ids, Schemas } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect, Layer, Schema } from "effect"
import { api, bodyOf, eventually, refused, request, sandboxSetup, signUp } from "./support/Fixtures.js"
import type { SignedUp } from "./support/Fixtures.js"
import { receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

const PHONE = "+4915112345678"
const clientOf = (user: SignedUp) => api(user.accessToken, user.workspaceId)

const delivery = (user: SignedUp, deliveryId: `whd_${string}`) =>
  Effect.flatMap(clientOf(user), (client) => client.webhooks.delivery({ path: { deliveryId } }))

const endpointWithTestDelivery = (user: SignedUp, url: string) =>
  Effect.gen(function*() {
    // the typed client decodes the declared 201 only
    const endpoint = yield* (yield* clientOf(user)).webhooks.create({ payload: { url, event_types: ["*"] } })
    return endpoint.id
  })

/** A queued outbound message written as the send path writes it (no HTTP: the workspace may be suspended). */
const queuedMessage = (workspaceId: string, channelId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const messages = yield* MessagesRepo.MessagesRepo
    const contacts = yield* ContactsRepo.ContactsRepo
    const conversations = yield* ConversationsRepo.ConversationsRepo
    const now = Schemas.toTimestamp(Date.now())
    return yield* sql.withTransaction(Effect.gen(function*() {
      const contact = yield* contacts.upsertContact(workspaceId, PHONE, now)
      const conversationId = yield* conversations.upsertConversation(workspaceId, channelId, contact.id, now)
      const message = yield* messages.insert({
        id: yield* Ids.newId("msg"),
        workspaceId,
        channelId,
        conversationId,
        contactId: contact.id,
        direction: "outbound",
        from: null,
        to: PHONE,
        body: "held",
        category: "utility",
        priority: 1,
        status: "queued",
        metadata: {},
        now
      })
      return message.id
    }))
  }).pipe(
    Effect.provide(
      Layer.mergeAll(
        MessagesRepo.MessagesRepo.Default,
        ContactsRepo.ContactsRepo.Default,
        ConversationsRepo.ConversationsRepo.Default
      )
    ),
    Effect.orDie
  )

const statusOf = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ status: string }>`SELECT status FROM messages WHERE id = ${id}`)
    .pipe(Effect.map((rows) => rows[0]?.status), Effect.orDie)

describe("contract gaps", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("GET /v1/usage counts live webhook endpoints only, like the entitlement check", () =>
      Effect.gen(function*() {
        const sink = yield* receiver()
        const user = yield* signUp()
        const client = yield* clientOf(user)
        const first = yield* endpointWithTestDelivery(user, `${sink.url}/a`)
        const deleted = yield* client.webhooks.delete({ path: { endpointId: first } })
        assert.isTrue(deleted.deleted)
        // the free plan allows one: the deleted one does not count for the check...
        yield* endpointWithTestDelivery(user, `${sink.url}/b`)
        // ...nor for the report
        const usage = yield* client.plan.usage()
        assert.deepStrictEqual(usage.current.webhook_endpoints, {
          used: 1,
          limit: 1,
          unlimited: false,
          remaining: 0
        })
      }))

    it.scoped("refuses to replay a delivery whose endpoint was deleted (409, not 202)", () =>
      Effect.gen(function*() {
        const sink = yield* receiver(() => ({ status: 400 }))
        const user = yield* signUp()
        const client = yield* clientOf(user)
        const endpoint = yield* endpointWithTestDelivery(user, sink.url)
        // no body at all, like the other action routes (`{}` is the same)
        // raw: a request without a body, which the typed client does not send (it sends `null`)
        const test = yield* request("POST", `/v1/webhook-endpoints/${endpoint}/test`, {
          token: user.accessToken,
          workspace: user.workspaceId
        })
        assert.strictEqual(test.status, 202)
        const deliveryId = bodyOf(Schema.Struct({ delivery_id: Ids.IdRef("whd") }), test).delivery_id
        const failed = yield* eventually(delivery(user, deliveryId), (d) => d.status === "failed")
        assert.strictEqual(failed.status, "failed")
        const deleted = yield* client.webhooks.delete({ path: { endpointId: endpoint } })
        assert.isTrue(deleted.deleted)
        const replay = yield* refused(client.webhooks.replay({ path: { deliveryId } }))
        assert.strictEqual(replay.status, 409)
        assert.strictEqual(replay.code, "CONFLICT")
        assert.strictEqual(replay.details.reason, "endpoint_deleted")
        assert.strictEqual((yield* delivery(user, deliveryId)).replay_count, 0)
      }))

    it.scoped("a paused endpoint's held deliveries are gone once older than the 30-day retention, never sent", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const sink = yield* receiver()
        const user = yield* signUp()
        const client = yield* clientOf(user)
        const endpoint = yield* endpointWithTestDelivery(user, sink.url)
        const path = { endpointId: endpoint }
        const paused = yield* client.webhooks.update({ path, payload: { status: "paused" } })
        assert.strictEqual(paused.status, "paused")
        const old = yield* client.webhooks.test({ path, payload: {} })
        const recent = yield* client.webhooks.test({ path, payload: {} })
        assert.strictEqual((yield* delivery(user, old.delivery_id)).status, "pending")
        // the delivery as if recorded 31 days ago: retention goes by the time in the id (the key of
        // the month partitions, docs/OPERATING.md "Partitions and retention")
        const day = 24 * 3600 * 1000
        const oldId: `whd_${string}` = `${Ids.idFloor("whd", Date.now() - 31 * day)}${old.delivery_id.slice(14)}`
        yield* sql`UPDATE webhook_deliveries SET id = ${oldId}, created_at = now() - interval '31 days'
          WHERE id = ${old.delivery_id}`

        assert.strictEqual((yield* refused(delivery(user, oldId))).status, 404)
        assert.strictEqual((yield* delivery(user, recent.delivery_id)).status, "pending")
        // resumed, the endpoint gets the recent one only: the old one is never pulled
        yield* client.webhooks.update({ path, payload: { status: "active" } })
        yield* eventually(delivery(user, recent.delivery_id), (d) => d.status === "succeeded")
        assert.deepStrictEqual(sink.received.map((r) => r.headers["x-webhook-delivery-id"]), [recent.delivery_id])
        const [row] = yield* sql<{ status: string; attempt_count: number }>`
          SELECT status, attempt_count FROM webhook_deliveries WHERE id = ${oldId}`
        assert.deepStrictEqual(row, { status: "pending", attempt_count: 0 })
      }))

    it.effect("a suspended workspace's channels hold their queue; reactivated, they dispatch it", () =>
      Effect.gen(function*() {
        const operator = yield* Operator.Operator
        const { session, user } = yield* sandboxSetup([PHONE])
        yield* operator.setStatus(user.workspaceId, "suspended")
        const id = yield* queuedMessage(user.workspaceId, session.channel_id)
        // the sweeper wakes channels with due work every second; the channel polls its queue
        yield* Effect.sleep("3 seconds")
        assert.strictEqual(yield* statusOf(id), "queued")
        yield* operator.setStatus(user.workspaceId, "active")
        const after = yield* eventually(statusOf(id), (s) => s !== "queued" && s !== "dispatching")
        assert.notStrictEqual(after, "queued")
      }).pipe(Effect.provide(TestApp.operatorLayer)))
  })
})
