/**
 * The dispatch loop on effect 4 (a spike, not production): a cluster runner (`effect/cluster`,
 * Cluster.ts) hosting the `Channel` entity. Each channel's entity runs one loop fiber: claim the
 * next `BATCH` queued messages of the channel in dispatch order, move each through
 * queued -> dispatching -> provider_accepted -> sent -> delivered -> read (each move ONE
 * statement, the same as bench/lib/BareDispatch.ts and `MessagesRepo.transition`: row lock,
 * allowed-from states, the dispatch-order probe, the timeline row, the event with its outbox
 * fan-out), and wait for a `Wake` when the channel has nothing queued. Like the bare loop it runs
 * flat out (no pacing, no provider, no receipts' timers), `DATABASE_POOL_SIZE` (10) connections.
 *
 *   DATABASE_URL=... WORKSPACE_ID=ws_... CLUSTER_PORT=... SECONDS=20 MODE=flat|serve node --import tsx dispatch4.ts
 *
 * MODE=flat: wakes every connected channel of the workspace, measures `SECONDS`, prints one JSON
 * line (messages, seconds, messages_per_second, cpu_ms_per_message) like BareDispatch.ts, exits.
 * MODE=serve: hosts the entities for send4.ts's wake-ups and only takes them (no dispatch, so
 * the send benchmark's database sees the sends alone); prints `ready`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Queue, Redacted } from "effect"
import { Entity } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { monotonicFactory } from "ulid"
import { Channel } from "./Channel.js"
import * as Cluster from "./Cluster.js"

const env = (name: string, fallback: string) => process.env[name] ?? fallback
const workspaceId = env("WORKSPACE_ID", "")
const seconds = Number(env("SECONDS", "20"))
const flat = env("MODE", "flat") === "flat"
const BATCH = 10

const ulid = monotonicFactory()
const FROM: Record<string, ReadonlyArray<string>> = {
  dispatching: ["queued"],
  provider_accepted: ["dispatching"],
  sent: ["dispatching", "provider_accepted"],
  delivered: ["dispatching", "provider_accepted", "sent"],
  read: ["dispatching", "provider_accepted", "sent", "delivered"]
}
const EVENT: Record<string, string | undefined> = {
  sent: "message.sent",
  delivered: "message.delivered",
  read: "message.read"
}
const FROM_SLOT = "\u0000from\u0000"
const CATEGORY_SLOT = "\u0000category\u0000"

let deadline = Number.POSITIVE_INFINITY
let moved = 0

const makeMove = (sql: SqlClient.SqlClient) => (id: string, to: string) => {
  const now = new Date().toISOString()
  const type = EVENT[to]
  const eventId = `evt_${ulid()}`
  const [p0, p1, p2] = JSON.stringify({
    id: eventId,
    type,
    created_at: now,
    workspace_id: workspaceId,
    data: {
      object: "message",
      object_id: id,
      message_id: id,
      from_state: FROM_SLOT,
      to_state: to,
      category: CATEGORY_SLOT
    }
  }).split(/"\\u0000(?:from|category)\\u0000"/)
  const order = to === "dispatching"
    ? sql`AND EXISTS (SELECT 1 FROM channels c WHERE c.id = messages.channel_id AND c.status = 'connected')
         AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.channel_id = messages.channel_id AND o.status = 'queued'
           AND (o.priority, o.created_at, o.id) < (messages.priority, messages.created_at, messages.id)
           AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= ${now}))`
    : sql``
  const outbox = type === undefined ? sql`` : sql`, event AS (
       INSERT INTO events (id, workspace_id, type, object_id, envelope, is_test, created_at)
       SELECT ${eventId}, workspace_id, ${type}, id, ${p0!} || to_json(from_state)::text || ${p1!} || to_json(category)::text || ${p2!}, false, ${now}
       FROM moved
       RETURNING id, workspace_id, type, created_at
     ), delivery AS (
       INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, next_attempt_at,
         created_at, updated_at)
       SELECT 'whd_' || substr(ev.id, 5, 10) || ulid_random_part(), e.id, ev.workspace_id, ev.id, ev.type, 'pending',
         ev.created_at, ev.created_at, ev.created_at
       FROM event ev JOIN webhook_endpoints e ON e.workspace_id = ev.workspace_id AND e.deleted_at IS NULL
         AND e.status IN ('active', 'paused') AND (ev.type = ANY(e.event_types) OR '*' = ANY(e.event_types))
     )`
  return sql<{ id: string }>`WITH current AS (SELECT id, status FROM messages WHERE id = ${id} FOR UPDATE),
     moved AS (
       UPDATE messages SET status = ${to}, updated_at = ${now},
         sent_at = CASE WHEN ${to} IN ('sent', 'delivered', 'read') THEN COALESCE(sent_at, ${now}) ELSE sent_at END,
         delivered_at = CASE WHEN ${to} IN ('delivered', 'read') THEN COALESCE(delivered_at, ${now}) ELSE delivered_at END,
         read_at = CASE WHEN ${to} = 'read' THEN COALESCE(read_at, ${now}) ELSE read_at END
       FROM current
       WHERE messages.id = current.id AND current.status = ANY(${FROM[to]!}) AND messages.status = ANY(${FROM[to]!})
       ${order}
       RETURNING messages.id, messages.workspace_id, messages.category, current.status AS from_state
     ), timeline AS (
       INSERT INTO message_transitions (message_id, from_state, to_state, at) SELECT id, from_state, ${to}, ${now} FROM moved
     )${outbox}
     SELECT id FROM moved`.pipe(Effect.map((rows) => rows.length > 0))
}

const ChannelLive = Channel.toLayer(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const move = makeMove(sql)
    const channelId = (yield* Entity.CurrentAddress).entityId
    const wake = yield* Queue.unbounded<void>()
    const loop = Effect.gen(function*() {
      while (Date.now() < deadline) {
        const batch = yield* sql<
          { id: string }
        >`SELECT id FROM messages WHERE channel_id = ${channelId} AND status = 'queued'
           ORDER BY priority, created_at, id LIMIT ${sql.literal(String(BATCH))}`
        if (batch.length === 0) {
          yield* Queue.take(wake)
          continue
        }
        for (const { id } of batch) {
          if (!(yield* move(id, "dispatching"))) continue
          for (const to of ["provider_accepted", "sent", "delivered", "read"]) yield* move(id, to)
          moved++
          if (Date.now() >= deadline) break
        }
      }
    }).pipe(Effect.orDie)
    if (flat) yield* Effect.forkScoped(loop)
    return {
      Wake: () =>
        Effect.sync(() => {
          Queue.offerUnsafe(wake, undefined)
        })
    }
  }),
  { maxIdleTime: "1 hour" }
)

const Measure = Layer.effectDiscard(Effect.gen(function*() {
  if (!flat) {
    console.log("ready")
    return
  }
  const sql = yield* SqlClient.SqlClient
  const client = yield* Channel.client
  const channels = yield* sql<{ id: string }>`SELECT id FROM channels WHERE workspace_id = ${workspaceId}
    AND status = 'connected' ORDER BY id`
  yield* Effect.forkScoped(Effect.gen(function*() {
    // every channel's entity is started (and its loop with it) by its first wake-up
    yield* Effect.forEach(channels, (c) => client(c.id).Wake({ message_id: "" }), { concurrency: 20, discard: true })
    const cpu0 = process.cpuUsage()
    const started = Date.now()
    const moved0 = moved
    deadline = started + seconds * 1000
    yield* Effect.sleep(seconds * 1000)
    const messages = moved - moved0
    const elapsed = (Date.now() - started) / 1000
    const cpu = process.cpuUsage(cpu0)
    console.log(JSON.stringify({
      messages,
      seconds: elapsed,
      messages_per_second: messages / elapsed,
      cpu_ms_per_message: (cpu.user + cpu.system) / 1000 / Math.max(1, messages),
      channels: channels.length
    }))
  }))
}))

const Main = Layer.mergeAll(ChannelLive, Measure).pipe(
  Layer.provide(Cluster.layer({ host: "127.0.0.1", port: Number(env("CLUSTER_PORT", "34431")) })),
  Layer.provide(PgClient.layer({
    url: Redacted.make(env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")),
    maxConnections: Number(env("DATABASE_POOL_SIZE", "10"))
  }))
)

// SIGTERM (the harness, after the JSON line): runMain interrupts, the runner releases its shards
NodeRuntime.runMain(Layer.launch(Main))
