/**
 * A message's status events are written by the statement that moves it (`MessagesRepo.transition`
 * with `EventsRepo.outboxCtes`): the envelope is the one `EventsRepo.append` writes, byte for byte,
 * and the webhook fan-out (deliveries, wake-ups) is the same.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, layer } from "@effect/vitest"
import { ContactsRepo, ConversationsRepo, EventsRepo, MessagesRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Events, Ids, type MessageStateMachine, type Messaging, Schemas } from "@switchboard/domain"
import { Effect, Layer, Option, Ref, Stream } from "effect"

const TestLayer = Layer.mergeAll(
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  EventsRepo.EventsRepo.Default
)
  .pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const now = () => Schemas.toTimestamp(Date.now())

/** Real time (the test's clock is a TestClock): notifications travel through a real connection. */
const pause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/** A workspace with a connected channel, one queued message, and webhook endpoints of every kind. */
const setup = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const messages = yield* MessagesRepo.MessagesRepo
  const workspaceId = yield* Ids.newId("ws")
  yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now()}, ${now()})`
  const channelId = yield* Ids.newId("ch")
  yield* sql`INSERT INTO channels (id, workspace_id, name, provider, status, created_at, updated_at)
    VALUES (${channelId}, ${workspaceId}, 'c', 'sandbox', 'connected', ${now()}, ${now()})`
  const endpoint = (status: string, types: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const id = yield* Ids.newId("wh")
      yield* sql`INSERT INTO webhook_endpoints (id, workspace_id, url, event_types, status, secret_sealed, secret_last4,
          created_at, updated_at)
        VALUES (${id}, ${workspaceId}, 'https://example.com/hook', ${types}, ${status}, 'sealed', 'abcd', ${now()}, ${now()})`
      return id
    })
  const endpoints = {
    all: yield* endpoint("active", ["*"]),
    sentOnly: yield* endpoint("active", ["message.sent"]),
    paused: yield* endpoint("paused", ["message.sent", "message.failed"]),
    readOnly: yield* endpoint("active", ["message.read"]),
    disabled: yield* endpoint("disabled", ["*"])
  }
  const contact = yield* (yield* ContactsRepo.ContactsRepo).upsertContact(workspaceId, "+4915112345678", now())
  const conversationId = yield* (yield* ConversationsRepo.ConversationsRepo).upsertConversation(
    workspaceId,
    channelId,
    contact.id,
    now()
  )
  const insert = Effect.flatMap(Ids.newId("msg"), (id) =>
    messages.insert({
      id,
      workspaceId,
      channelId,
      conversationId,
      contactId: contact.id,
      direction: "outbound",
      from: null,
      to: "+4915112345678",
      body: "hi",
      category: "marketing",
      priority: 3,
      status: "queued",
      metadata: {},
      now: now()
    }))
  return { workspaceId, endpoints, insert }
}).pipe(Effect.orDie)

const eventOf = (messageId: string, type: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string; envelope: string; created_at: Date | string }>`
      SELECT id, envelope, created_at FROM events WHERE object_id = ${messageId} AND type = ${type}`).pipe(
      Effect.map((rows) => {
        assert.strictEqual(rows.length, 1, `one ${type} event`)
        return rows[0]!
      }),
      Effect.orDie
    )

/** What `EventsRepo.append` writes for the same event, with the id and time of `written`. */
const appendedTwin = (
  written: { id: string; envelope: string },
  workspaceId: string,
  event: Events.DomainEvent
) =>
  Effect.gen(function*() {
    const parsed = JSON.parse(written.envelope) as { id: string; created_at: string }
    const appended = yield* (yield* EventsRepo.EventsRepo).append({ workspaceId, event, occurredAt: parsed.created_at })
    return appended.envelope.replace(appended.id, written.id)
  })

describe("status events written by the transition's statement", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.scoped("writes the envelope append writes, byte for byte, and fans out as append does", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const messages = yield* MessagesRepo.MessagesRepo
        const { endpoints, insert, workspaceId } = yield* setup
        // Postgres server: the active endpoints' wake-ups, delivered at commit
        const pg = TestDatabase.mode() === "real" ? yield* Effect.serviceOption(PgClient.PgClient) : Option.none()
        const woken = yield* Ref.make<ReadonlyArray<string>>([])
        if (Option.isSome(pg)) {
          yield* pg.value.listen(EventsRepo.WEBHOOK_WAKE_CHANNEL).pipe(
            Stream.runForEach((id) => Ref.update(woken, (ids) => [...ids, id])),
            Effect.forkScoped
          )
          yield* pause(300)
        }

        const message = yield* insert
        for (const to of ["dispatching", "provider_accepted", "sent"] as const) {
          assert.isTrue(Option.isSome(yield* messages.transition(message.id, to)), `moved to ${to}`)
        }
        if (Option.isSome(pg)) {
          // the active subscribed endpoints, once each; never the paused, disabled or unsubscribed ones
          yield* pause(300)
          assert.deepStrictEqual([...(yield* Ref.get(woken))].sort(), [endpoints.all, endpoints.sentOnly].sort())
        }
        const sent = yield* eventOf(message.id, "message.sent")
        const expected = yield* appendedTwin(
          sent,
          workspaceId,
          Events.DomainEvent.make("message.sent", {
            object: "message",
            object_id: message.id,
            message_id: message.id,
            from_state: "provider_accepted",
            to_state: "sent",
            category: "marketing"
          })
        )
        assert.strictEqual(sent.envelope, expected)

        // a failure carries its members, quotes and all
        const other = yield* insert
        assert.isTrue(Option.isSome(yield* messages.transition(other.id, "dispatching")))
        const failure = { class: "permanent", code: "recipient_blocked", reason: "said \"no\" \\ twice\n" } as const
        assert.isTrue(Option.isSome(yield* messages.transition(other.id, "failed_permanent", { failure })))
        const failed = yield* eventOf(other.id, "message.failed")
        assert.strictEqual(
          failed.envelope,
          yield* appendedTwin(
            failed,
            workspaceId,
            Events.DomainEvent.make("message.failed", {
              object: "message",
              object_id: other.id as Messaging.Message["id"],
              message_id: other.id as Messaging.Message["id"],
              from_state: "dispatching",
              to_state: "failed_permanent",
              category: "marketing",
              failure_class: "permanent",
              error_code: "recipient_blocked",
              reason: failure.reason
            })
          )
        )

        // deliveries: every subscribed endpoint not disabled (paused ones too), fresh ids in the shape of all ids
        const deliveries = yield* sql<{ id: string; endpoint_id: string; status: string; event_id: string }>`
          SELECT id, endpoint_id, status, event_id FROM webhook_deliveries WHERE event_id = ${sent.id} ORDER BY endpoint_id`
        assert.deepStrictEqual(
          deliveries.map((d) => d.endpoint_id).sort(),
          [endpoints.all, endpoints.sentOnly, endpoints.paused].sort()
        )
        for (const d of deliveries) {
          assert.match(d.id, /^whd_[0-9A-HJKMNP-TV-Z]{26}$/)
          assert.strictEqual(d.id.slice(4, 14), sent.id.slice(4, 14), "the event id's time part")
          assert.strictEqual(d.status, "pending")
        }
        assert.strictEqual(new Set(deliveries.map((d) => d.id)).size, 3)
        const failedDeliveries = yield* sql<{ endpoint_id: string }>`
          SELECT endpoint_id FROM webhook_deliveries WHERE event_id = ${failed.id}`
        assert.deepStrictEqual(
          failedDeliveries.map((d) => d.endpoint_id).sort(),
          [endpoints.all, endpoints.paused].sort()
        )
        // appendedTwin wrote two more events through append: each fanned out the same way
        const byAppend = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
          WHERE e.workspace_id = ${workspaceId} AND e.object_id IN (${message.id}, ${other.id})`
        assert.strictEqual(byAppend[0]!.n, 3 + 2 + 3 + 2)

        // no event for moves that report none; a move the state does not allow writes nothing
        assert.isTrue(Option.isNone(yield* messages.transition(message.id, "dispatching")))
        const count = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE object_id = ${message.id}`
        assert.strictEqual(count[0]!.n, 2, "message.sent and its twin")
      }))

    it.scoped("applies a batch of receipts in one statement, each guarded, with the same events and timeline", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const messages = yield* MessagesRepo.MessagesRepo
        const { endpoints, insert, workspaceId } = yield* setup
        const moveTo = (id: string, path: ReadonlyArray<MessageStateMachine.MessageStatus>) =>
          Effect.forEach(path, (to) => messages.transition(id, to), { discard: true })
        const accepted = yield* insert
        yield* moveTo(accepted.id, ["dispatching", "provider_accepted"])
        const sent = yield* insert
        yield* moveTo(sent.id, ["dispatching", "provider_accepted", "sent"])
        const read = yield* insert
        yield* moveTo(read.id, ["dispatching", "provider_accepted", "sent", "read"])
        const queued = yield* insert
        const at = Schemas.toTimestamp(Date.now() - 5_000)
        const moves = yield* messages.receipts([
          { id: accepted.id, to: "sent", at },
          { id: sent.id, to: "read", at },
          { id: read.id, to: "delivered", at }, // late: never back
          { id: queued.id, to: "delivered", at }, // not sent yet: not allowed
          { id: "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z", to: "read", at }, // unknown
          { id: "3EB0C4A5F1D2B7E8", to: "read", at } // a provider's id of a message we did not send
        ])
        assert.deepStrictEqual(
          moves.map((m) => [m.id, m.from, m.status, m.provider]).sort(),
          [[accepted.id, "provider_accepted", "sent", "sandbox"], [sent.id, "sent", "read", "sandbox"]].sort()
        )
        const rows = yield* sql<
          { id: string; status: string; sent_at: Date; delivered_at: Date | null; read_at: Date }
        >`
          SELECT id, status, sent_at, delivered_at, read_at FROM messages WHERE id IN (${accepted.id}, ${sent.id}, ${read.id}, ${queued.id})`
        const byId = new Map(rows.map((r) => [r.id, r]))
        assert.strictEqual(byId.get(accepted.id)!.status, "sent")
        assert.strictEqual(new Date(byId.get(accepted.id)!.sent_at).toISOString(), at, "the receipt's own time")
        assert.strictEqual(byId.get(sent.id)!.status, "read")
        assert.strictEqual(new Date(byId.get(sent.id)!.delivered_at!).toISOString(), at, "read implies delivered")
        assert.strictEqual(byId.get(read.id)!.status, "read")
        assert.strictEqual(byId.get(queued.id)!.status, "queued")
        const timeline = yield* sql<{ message_id: string; from_state: string; to_state: string }>`
          SELECT message_id, from_state, to_state FROM message_transitions
          WHERE message_id IN (${accepted.id}, ${sent.id}, ${read.id}, ${queued.id}) AND at = ${at} ORDER BY message_id`
        assert.deepStrictEqual(
          timeline.map((t) => [t.message_id, t.from_state, t.to_state]).sort(),
          [[accepted.id, "provider_accepted", "sent"], [sent.id, "sent", "read"]].sort()
        )

        // the events are what append writes, byte for byte, and fan out as append does
        for (
          const [id, type, from, to] of [
            [accepted.id, "message.sent", "provider_accepted", "sent"],
            [sent.id, "message.read", "sent", "read"]
          ] as const
        ) {
          const written = yield* eventOf(id, type)
          assert.strictEqual(JSON.parse(written.envelope).created_at, at)
          const deliveries = yield* sql<{ endpoint_id: string }>`
            SELECT endpoint_id FROM webhook_deliveries WHERE event_id = ${written.id}`
          assert.deepStrictEqual(
            deliveries.map((d) => d.endpoint_id).sort(),
            (to === "sent"
              ? [endpoints.all, endpoints.sentOnly, endpoints.paused]
              : [endpoints.all, endpoints.readOnly])
              .sort()
          )
          assert.strictEqual(
            written.envelope,
            yield* appendedTwin(
              written,
              workspaceId,
              Events.DomainEvent.make(type, {
                object: "message",
                object_id: id,
                message_id: id,
                from_state: from,
                to_state: to,
                category: "marketing"
              })
            )
          )
        }
        assert.deepStrictEqual(yield* messages.receipts([]), [])
      }))
  })
})
