/**
 * Decisions fenced by the shard lease (`ShardLease`, docs/OPERATING.md "A paused runner"): taking
 * a message for a dispatch and taking webhook deliveries for an attempt are refused by the
 * database unless the caller's row in `cluster_locks` names it and is fresh. The lease table is
 * the one @effect/cluster's row-based shard locks keep (created here as the library does).
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import {
  ContactsRepo,
  ConversationsRepo,
  EventsRepo,
  MessagesRepo,
  type ShardLease,
  WebhookDeliveriesRepo,
  WebhookEndpointsRepo
} from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Events, Ids, Schemas } from "@switchboard/domain"
import { Effect, Layer, Option } from "effect"

const TestLayer = Layer.mergeAll(
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  EventsRepo.EventsRepo.Default,
  WebhookEndpointsRepo.WebhookEndpointsRepo.Default,
  WebhookDeliveriesRepo.WebhookDeliveriesRepo.Default
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const now = () => Schemas.toTimestamp(Date.now())
const SHARD = "default:17"
const lease = (address: string): ShardLease.ShardLease => ({ shardId: SHARD, address, expirySeconds: 8 })

/** The lock row of `SHARD`: held by `address`, refreshed `ageSeconds` ago. */
const lockRow = (address: string, ageSeconds: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // @effect/cluster's table (SqlRunnerStorage with shardLockDisableAdvisory)
    yield* sql`CREATE TABLE IF NOT EXISTS cluster_locks (
      shard_id VARCHAR(50) PRIMARY KEY, address VARCHAR(255) NOT NULL, acquired_at TIMESTAMP NOT NULL)`
    yield* sql`DELETE FROM cluster_locks`
    yield* sql`INSERT INTO cluster_locks (shard_id, address, acquired_at)
      VALUES (${SHARD}, ${address}, NOW() - make_interval(secs => ${ageSeconds}))`
  })

const setup = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const workspaceId = yield* Ids.newId("ws")
  yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now()}, ${now()})`
  const channelId = yield* Ids.newId("ch")
  yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, created_at, updated_at)
    VALUES (${channelId}, ${workspaceId}, 'c', 'sandbox', 'connected', ${now()}, ${now()})`
  const contact = yield* (yield* ContactsRepo.ContactsRepo).upsertContact(workspaceId, "+4915112345678", now())
  const conversationId = yield* (yield* ConversationsRepo.ConversationsRepo).upsertConversation(
    workspaceId,
    channelId,
    contact.id,
    now()
  )
  const message = yield* (yield* MessagesRepo.MessagesRepo).insert({
    id: yield* Ids.newId("msg"),
    workspaceId,
    channelId,
    conversationId,
    contactId: contact.id,
    direction: "outbound",
    from: null,
    to: "+4915112345678",
    body: "hi",
    category: "utility",
    priority: 3,
    status: "queued",
    metadata: {},
    now: now()
  })
  return { workspaceId, messageId: message.id }
}).pipe(Effect.orDie)

describe("decisions fenced by the shard lease", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("takes a message for a dispatch only while the caller's lease is held and fresh", () =>
      Effect.gen(function*() {
        const messages = yield* MessagesRepo.MessagesRepo
        const { messageId } = yield* setup
        // another runner took the shard
        yield* lockRow("127.0.0.1:34002", 0)
        assert.isTrue(
          Option.isNone(yield* messages.transition(messageId, "dispatching", { lease: lease("127.0.0.1:34001") }))
        )
        // ours, but not refreshed within the expiry (this runner was paused)
        yield* lockRow("127.0.0.1:34001", 20)
        assert.isTrue(
          Option.isNone(yield* messages.transition(messageId, "dispatching", { lease: lease("127.0.0.1:34001") }))
        )
        assert.strictEqual(yield* statusOf(messageId), "queued", "refused: nothing moved")
        // ours and fresh
        yield* lockRow("127.0.0.1:34001", 1)
        const moved = yield* messages.transition(messageId, "dispatching", { lease: lease("127.0.0.1:34001") })
        assert.strictEqual(Option.getOrThrow(moved).status, "dispatching")
        // an outcome is a fact: recorded without a lease whoever holds the shard now
        yield* lockRow("127.0.0.1:34002", 0)
        assert.isTrue(Option.isSome(yield* messages.transition(messageId, "provider_accepted")))
      }))

    it.effect("takes several channels' messages in one statement only for the claims whose lease is held and fresh", () =>
      Effect.gen(function*() {
        const messages = yield* MessagesRepo.MessagesRepo
        const ours = yield* setup
        const theirs = yield* setup
        const unfenced = yield* setup
        const take = (address: string) =>
          Effect.map(
            messages.takeForDispatch([
              { id: ours.messageId, at: now(), waiting: [], lease: lease(address) },
              { id: theirs.messageId, at: now(), waiting: [], lease: { ...lease(address), shardId: "default:18" } },
              { id: unfenced.messageId, at: now(), waiting: [], lease: undefined }
            ]),
            (moved) => moved.map((m) => m.id).sort()
          )
        // ours, but not refreshed within the expiry (this runner was paused); shard 18 has no row
        yield* lockRow("127.0.0.1:34001", 20)
        assert.deepStrictEqual(yield* take("127.0.0.1:34001"), [unfenced.messageId], "only the claim with no lease")
        assert.strictEqual(yield* statusOf(ours.messageId), "queued", "refused: nothing moved")
        // ours and fresh
        yield* lockRow("127.0.0.1:34001", 1)
        assert.deepStrictEqual(yield* take("127.0.0.1:34001"), [ours.messageId])
        assert.strictEqual(yield* statusOf(theirs.messageId), "queued", "no lease row for its shard")
      }))

    it.effect("takes webhook deliveries for an attempt only while the caller's lease is held and fresh", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
        const { workspaceId } = yield* setup
        const endpointId = yield* Ids.newId("wh")
        yield* (yield* WebhookEndpointsRepo.WebhookEndpointsRepo).insert({
          id: endpointId,
          workspaceId,
          url: "https://hooks.example.com/in",
          eventTypes: ["*"],
          description: "",
          secretSealed: "v1:unused",
          secretLast4: "abcd",
          now: now()
        })
        yield* (yield* EventsRepo.EventsRepo).append({
          workspaceId,
          occurredAt: Schemas.toTimestamp(Date.now() - 1000),
          event: Events.DomainEvent.make("message.queued", {
            object: "message",
            object_id: "msg_00000000000000000000000001",
            message_id: "msg_00000000000000000000000001",
            from_state: null,
            to_state: "queued",
            category: "utility"
          })
        })
        const claim = (address: string) =>
          Effect.map(
            deliveries.claimDueMany([{ endpointId, now: now(), limit: 5, lease: lease(address) }]),
            (answers) => answers[0]!.length
          )
        yield* lockRow("127.0.0.1:34002", 0)
        assert.strictEqual(yield* claim("127.0.0.1:34001"), 0, "another runner holds the shard")
        yield* lockRow("127.0.0.1:34001", 20)
        assert.strictEqual(yield* claim("127.0.0.1:34001"), 0, "the lease expired")
        yield* lockRow("127.0.0.1:34001", 1)
        assert.strictEqual(yield* claim("127.0.0.1:34001"), 1, "held and fresh: taken")
      }))
  })
})

const statusOf = (messageId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ status: string }>`SELECT status FROM messages WHERE id = ${messageId}`,
      (rows) => rows[0]!.status
    )).pipe(Effect.orDie)
