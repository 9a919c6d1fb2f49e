/** Recovery paths of the actor core: lost wake-ups, repeated dispatch, an unreachable database. */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ContactsRepo, ConversationsRepo, DatabaseConfig, EventsRepo, MessagesRepo } from "@switchboard/db"
import { testDatabaseUrl } from "@switchboard/db/testing"
import { Ids, Schemas } from "@switchboard/domain"
import { SandboxProvider } from "@switchboard/providers"
import { Effect, Layer, Option, Redacted } from "effect"
import pg from "pg"
import { api, refused, sandboxSetup, waitForMessage } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"

const Repos = Layer.mergeAll(
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  EventsRepo.EventsRepo.Default
)

describe("dispatch recovery", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("dispatches a queued message whose wake-up was lost (the sweeper wakes the channel)", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const sql = yield* SqlClient.SqlClient
        const messages = yield* MessagesRepo.MessagesRepo
        const contacts = yield* ContactsRepo.ContactsRepo
        const conversations = yield* ConversationsRepo.ConversationsRepo
        // a committed send whose process died before the wake-up: the row alone, no Wake
        const now = Schemas.toTimestamp(Date.now())
        const id = yield* Ids.newId("msg")
        yield* sql.withTransaction(Effect.gen(function*() {
          const workspaceId = yield* workspaceOf(session.channel_id)
          const contact = yield* contacts.upsertContact(workspaceId, TO, now)
          const conversationId = yield* conversations.upsertConversation(
            workspaceId,
            session.channel_id,
            contact.id,
            now
          )
          yield* messages.insert({
            id,
            workspaceId,
            channelId: session.channel_id,
            conversationId,
            contactId: contact.id,
            direction: "outbound",
            from: session.phone_number,
            to: TO,
            body: "orphan",
            category: "utility",
            priority: 1,
            status: "queued",
            metadata: {},
            now
          })
        }))
        const read = yield* waitForMessage(key, id, (m) => m.status === "read", 30_000)
        assert.strictEqual(read.text.body, "orphan")
      }).pipe(Effect.provide(Repos)))

    it.effect("delivers a message id once even when it is dispatched again; its events are not repeated", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const sent = yield* (yield* api(key)).messages.send({
          payload: { to: TO, text: { body: "once" } },
          headers: {}
        })
        yield* waitForMessage(key, sent.id, (m) => m.status === "read")
        // a second dispatch of the same id, as after a crash between the provider call and the commit
        const again = yield* Effect.scoped(Effect.gen(function*() {
          const provider = yield* SandboxProvider.SandboxProvider
          const connection = yield* provider.connect({ id: session.channel_id } as never)
          return yield* connection.send({ id: sent.id, to: TO, body: "once" })
        }))
        assert.strictEqual(again._tag, "Accepted")
        const sql = yield* SqlClient.SqlClient
        const handset = yield* sql<
          { n: number }
        >`SELECT count(*)::int AS n FROM sandbox_deliveries WHERE message_id = ${sent.id}`
        assert.strictEqual(handset[0]!.n, 1)
        yield* Effect.sleep("2 seconds")
        const events = yield* sql<
          { type: string }
        >`SELECT type FROM events WHERE object_id = ${sent.id} ORDER BY created_at`
        assert.deepStrictEqual(events.map((e) => e.type), [
          "message.queued",
          "message.sent",
          "message.delivered",
          "message.read"
        ])
      }).pipe(
        Effect.provide(SandboxProvider.SandboxProvider.Default)
      ))

    it.effect("refuses a send when the channel's backlog exceeds 24 h of its throughput", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const sql = yield* SqlClient.SqlClient
        // 2 msg/s x 24 h = 172,800 waiting messages. The send path reads the channel's queue count
        // (`channel_queue_counts`, kept by triggers: exact through every kind of write,
        // packages/db/test/DispatchQueueRepo.test.ts), so the count is raised here without the rows;
        // inserting them took 25 s of the embedded suite
        const client = yield* api(key)
        const backlog = (delta: number) =>
          sql`INSERT INTO channel_queue_counts (channel_id, slot, queued) VALUES (${session.channel_id}, 0, ${delta})
            ON CONFLICT (channel_id, slot) DO UPDATE SET queued = channel_queue_counts.queued + EXCLUDED.queued`
        yield* backlog(172_800)
        const limited = yield* refused(client.messages.send({
          payload: { to: TO, text: { body: "one more" }, channel_id: session.channel_id },
          headers: {}
        }))
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.code, "PROVIDER_RATE_LIMITED")
        yield* backlog(-172_800)
      }))
  })
})

const workspaceOf = (channelId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      Effect.map(sql<{ workspace_id: string }>`SELECT workspace_id FROM channels WHERE id = ${channelId}`, (r) =>
        r[0]!.workspace_id)
  )

describe.skipIf(testDatabaseUrl() === undefined)("an unreachable database", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("answers 503 SERVICE_UNAVAILABLE and nothing half-written", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const config = yield* DatabaseConfig.DatabaseConfig
        const url = new URL(Redacted.value(Option.getOrThrow(config.url)))
        const database = url.pathname.slice(1)
        const admin = async (query: string) => {
          const client = new pg.Client({ connectionString: testDatabaseUrl() })
          await client.connect()
          try {
            await client.query(query)
          } finally {
            await client.end()
          }
        }
        yield* Effect.promise(() => admin(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`))
        yield* Effect.promise(() =>
          admin(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`
          )
        )
        const client = yield* api(key)
        const reply = yield* refused(
          client.messages.send({ payload: { to: TO, text: { body: "lost?" } }, headers: {} })
        )
        yield* Effect.promise(() => admin(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`))
        assert.strictEqual(reply.status, 503)
        assert.strictEqual(reply.code, "SERVICE_UNAVAILABLE")
        const list = yield* Effect.retry(client.messages.list({ urlParams: {} }), { times: 20 })
        assert.strictEqual(list.data.length, 0)
      }))
  })
})
