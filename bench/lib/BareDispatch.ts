/**
 * The limit of dispatch (bench:dispatch's baseline): a plain `pg` loop, no framework, no Effect,
 * no cluster, that does the durable work of a sandbox message's life against the same schema, as
 * fast as it can: per message the five moves queued -> dispatching -> provider_accepted -> sent
 * -> delivered -> read, each ONE statement as `MessagesRepo.transition` makes it (row lock,
 * allowed-from states, the dispatch-order probe on `-> dispatching`, the timeline row and, for a
 * move that reports one, the event row with its outbox fan-out: one delivery row per subscribed
 * endpoint), no transaction around it.
 * Channels are taken round robin, `BATCH` queued messages per read, in dispatch order.
 * Not included: the provider's simulated network (`sandbox_deliveries`), pacing (it runs flat out)
 * and the receipts' timers.
 *
 * Run as a child process so its CPU is its own:
 *   DATABASE_URL=... WORKSPACE_ID=ws_... SECONDS=30 CONCURRENCY=10 node --import tsx bench/lib/BareDispatch.ts
 * Prints one JSON line: messages, seconds, messages_per_second, cpu_ms_per_message.
 */
import { clientClass } from "@switchboard/db/PreparedStatements"
import pg from "pg"
import { monotonicFactory } from "ulid"

const databaseUrl = process.env["DATABASE_URL"]!
const workspaceId = process.env["WORKSPACE_ID"]!
const seconds = Number(process.env["SECONDS"] ?? "30")
const concurrency = Number(process.env["CONCURRENCY"] ?? "10")
const BATCH = 10

const pool = new pg.Pool({
  connectionString: databaseUrl,
  max: concurrency,
  // named statements from the 5th run of a text, as the api node and the runner do (0: none)
  Client: clientClass(Number(process.env["DATABASE_PREPARE_THRESHOLD"] ?? "5"))
})
const ulid = monotonicFactory()
const newId = (prefix: string) => `${prefix}_${ulid()}`

/** The states a move to `to` may start from (the state machine, docs/STATE-MACHINES.md). */
const FROM: Record<string, ReadonlyArray<string>> = {
  dispatching: ["queued"],
  provider_accepted: ["dispatching"],
  sent: ["dispatching", "provider_accepted"],
  delivered: ["dispatching", "provider_accepted", "sent"],
  read: ["dispatching", "provider_accepted", "sent", "delivered"]
}
/** The moves that report an event, and its type. */
const EVENT: Record<string, string | undefined> = {
  sent: "message.sent",
  delivered: "message.delivered",
  read: "message.read"
}

/** Marks where the statement puts the state a move came from and the message's category. */
const FROM_SLOT = "\u0000from\u0000"
const CATEGORY_SLOT = "\u0000category\u0000"

/**
 * One statement per move, as `MessagesRepo.transition` does it: lock, guarded update, timeline
 * row, and for a move that reports one, the event (its envelope completed by the statement with
 * the state it came from and the category) with one delivery per subscribed endpoint.
 */
const move = async (client: pg.PoolClient, id: string, to: string) => {
  const now = new Date().toISOString()
  const type = EVENT[to]
  const eventId = newId("evt")
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
  const moved = await client.query(
    `WITH current AS (SELECT id, status FROM messages WHERE id = $1 FOR UPDATE),
     moved AS (
       UPDATE messages SET status = $2, updated_at = $3,
         sent_at = CASE WHEN $2 IN ('sent', 'delivered', 'read') THEN COALESCE(sent_at, $3) ELSE sent_at END,
         delivered_at = CASE WHEN $2 IN ('delivered', 'read') THEN COALESCE(delivered_at, $3) ELSE delivered_at END,
         read_at = CASE WHEN $2 = 'read' THEN COALESCE(read_at, $3) ELSE read_at END
       FROM current
       WHERE messages.id = current.id AND current.status = ANY($4) AND messages.status = ANY($4)
       ${
      to === "dispatching"
        ? `AND EXISTS (SELECT 1 FROM channels c WHERE c.id = messages.channel_id AND c.status = 'connected')
         AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.channel_id = messages.channel_id AND o.status = 'queued'
           AND (o.priority, o.created_at, o.id) < (messages.priority, messages.created_at, messages.id)
           AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= $3))`
        : ""
    }
       RETURNING messages.id, messages.workspace_id, messages.category, current.status AS from_state
     ), timeline AS (
       INSERT INTO message_transitions (message_id, from_state, to_state, at) SELECT id, from_state, $2, $3 FROM moved
     )${
      type === undefined ? "" : `, event AS (
       INSERT INTO events (id, workspace_id, type, object_id, envelope, is_test, created_at)
       SELECT $5, workspace_id, $6, id, $7 || to_json(from_state)::text || $8 || to_json(category)::text || $9, false, $3
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
    }
     SELECT id FROM moved`,
    type === undefined
      ? [id, to, now, FROM[to]]
      : [id, to, now, FROM[to], eventId, type, p0, p1, p2]
  )
  return moved.rows.length > 0
}

const main = async () => {
  const channels = (await pool.query<{ id: string }>(
    "SELECT id FROM channels WHERE workspace_id = $1 AND status = 'connected' ORDER BY id",
    [workspaceId]
  )).rows.map((r) => r.id)
  let nextChannel = 0
  let messages = 0
  const cpu0 = process.cpuUsage()
  const started = Date.now()
  const deadline = started + seconds * 1000
  await Promise.all(Array.from({ length: concurrency }, async () => {
    const client = await pool.connect()
    try {
      while (Date.now() < deadline) {
        // a channel of its own at a time: one writer per channel, as the Channel entity is
        const channel = channels[nextChannel++ % channels.length]!
        const batch = await client.query<{ id: string }>(
          `SELECT id FROM messages WHERE channel_id = $1 AND status = 'queued'
           ORDER BY priority, created_at, id LIMIT ${BATCH}`,
          [channel]
        )
        for (const { id } of batch.rows) {
          if (!(await move(client, id, "dispatching"))) continue
          for (const to of ["provider_accepted", "sent", "delivered", "read"]) await move(client, id, to)
          messages++
          if (Date.now() >= deadline) break
        }
      }
    } finally {
      client.release()
    }
  }))
  const elapsed = (Date.now() - started) / 1000
  const cpu = process.cpuUsage(cpu0)
  console.log(JSON.stringify({
    messages,
    seconds: elapsed,
    messages_per_second: messages / elapsed,
    cpu_ms_per_message: (cpu.user + cpu.system) / 1000 / Math.max(1, messages)
  }))
  await pool.end()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
