/**
 * What the migration to monthly partitions costs an existing installation (docs/OPERATING.md "The
 * migration to partitions"): a new database migrated as the release before it left it (through
 * migration 0137), `--rows` (1,000,000) events, webhook deliveries, webhook attempts, messages (half
 * of them inbound, with their provider's ids) and timeline rows each (ids and times spread over the
 * last `--months`, 12), then the pending migrations (0150-0152 and 0180, messages) run and timed.
 * They run in one transaction holding an ACCESS EXCLUSIVE lock on the five tables, so
 * `migration_s` is how long sends, dispatches and webhook pulls wait during the upgrade. Also
 * recorded: the seeding time, each table's size, the partitions made, and that every row is in
 * the first partition afterwards.
 *
 *   npm run bench:partition-migration -- [--rows 1000000] [--months 12] [--keep]
 *
 * Real Postgres only (`DATABASE_URL`). One JSON line in bench/results/partition-migration.jsonl;
 * `--keep` leaves the database (its URL is printed) for EXPLAIN after the run.
 */
import { Database, Migrations, Partitions } from "@switchboard/db"
import { testDatabaseUrl, withDatabase } from "@switchboard/db/testing"
import { Effect, Redacted } from "effect"
import pg from "pg"
import { flag, noteServerSettings, numberFlag, record } from "./lib/Measure.js"

const rows = numberFlag("rows", 1_000_000)
const months = numberFlag("months", 12)
const keep = flag("keep") === true
const CHUNK = 100_000
const LAST_BEFORE_PARTITIONS = 137

const url = testDatabaseUrl()
if (url === undefined) {
  console.error("bench:partition-migration needs a real Postgres: set DATABASE_URL")
  process.exit(1)
}
const name = `sbt_bench_partitions_${process.pid}`

const withClient = async <A>(target: string, body: (db: pg.Client) => Promise<A>): Promise<A> => {
  const db = new pg.Client({ connectionString: target })
  await db.connect()
  try {
    return await body(db)
  } finally {
    await db.end()
  }
}

const migrate = (target: string, through: number) =>
  Effect.runPromise(
    Migrations.runThrough(through).pipe(Effect.provide(Database.layerPostgres(Redacted.make(target), 1)), Effect.scoped)
  )

const seconds = (since: number) => Math.round((performance.now() - since) / 10) / 100

await withClient(url, (db) => db.query(`CREATE DATABASE "${name}"`))
const target = withDatabase(url, name)
try {
  await migrate(target, LAST_BEFORE_PARTITIONS)
  const seeded = await withClient(target, async (db) => {
    const settings = await db.query<{ name: string; setting: string }>(
      "SELECT name, setting FROM pg_settings WHERE name IN ('autovacuum', 'shared_buffers', 'max_wal_size')"
    )
    noteServerSettings(Object.fromEntries(settings.rows.map((r) => [r.name, r.setting])))
    // an id of `prefix` made at `ms` (the ULID time, Ids.idFloor) with `n` as its random part
    await db.query(`CREATE FUNCTION bench_id(prefix text, ms bigint, n bigint) RETURNS text IMMUTABLE LANGUAGE sql AS $$
      SELECT prefix || '_' || string_agg(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> (5 * (9 - i))) & 31)::int + 1, 1),
        '' ORDER BY i) || lpad(n::text, 16, '0') FROM generate_series(0, 9) AS i $$`)
    await db.query(`INSERT INTO workspaces (id, name, created_at, updated_at)
      VALUES ('ws_00BENCH0000000000000000001', 'bench', now(), now())`)
    await db.query(`INSERT INTO webhook_endpoints (id, workspace_id, url, event_types, status, secret_sealed,
      secret_last4, created_at, updated_at) VALUES ('wh_00BENCH0000000000000000001', 'ws_00BENCH0000000000000000001',
      'https://hooks.example.com/in', '{*}', 'active', 'v1:x', 'abcd', now(), now())`)
    await db.query(`INSERT INTO channels (id, workspace_id, name, provider, status, created_at, updated_at)
      VALUES ('ch_00BENCH0000000000000000001', 'ws_00BENCH0000000000000000001', 'bench', 'sandbox', 'connected',
        now(), now())`)
    await db.query(`INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at)
      VALUES ('cnt_00BENCH0000000000000000001', 'ws_00BENCH0000000000000000001', '+4915112345678', now(), now())`)
    await db.query(`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, created_at, updated_at)
      VALUES ('cnv_00BENCH0000000000000000001', 'ws_00BENCH0000000000000000001', 'ch_00BENCH0000000000000000001',
        'cnt_00BENCH0000000000000000001', 'open', now(), now())`)
    const spanMs = months * 30 * 24 * 3600 * 1000
    const started = performance.now()
    const end = Date.now()
    for (let low = 1; low <= rows; low += CHUNK) {
      const high = Math.min(rows, low + CHUNK - 1)
      // row g made (rows - g) / rows of the span ago: the oldest first, the newest a moment ago
      const time = `(${end}::bigint - ((${rows} - g)::numeric * ${spanMs} / ${rows})::bigint)`
      await db.query(
        `INSERT INTO events (id, workspace_id, type, object_id, envelope, created_at)
        SELECT bench_id('evt', ${time}, g), 'ws_00BENCH0000000000000000001', 'message.delivered', 'msg_x',
          repeat('x', 400), to_timestamp(${time} / 1000.0)
        FROM generate_series($1::int, $2::int) AS g`,
        [low, high]
      )
      await db.query(
        `INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status,
          attempt_count, response_status, failure_reason, latency_ms, created_at, updated_at)
        SELECT bench_id('whd', ${time}, g), 'wh_00BENCH0000000000000000001', 'ws_00BENCH0000000000000000001',
          bench_id('evt', ${time}, g), 'message.delivered', 'succeeded', 1, 200, 'ok', 12,
          to_timestamp(${time} / 1000.0), to_timestamp(${time} / 1000.0)
        FROM generate_series($1::int, $2::int) AS g`,
        [low, high]
      )
      await db.query(
        `INSERT INTO webhook_attempts (delivery_id, attempt, at, response_status, failure_reason, latency_ms)
        SELECT bench_id('whd', ${time}, g), 1, to_timestamp(${time} / 1000.0), 200, 'ok', 12
        FROM generate_series($1::int, $2::int) AS g`,
        [low, high]
      )
      // messages: odd rows inbound (with the provider's id, claimed by migration 0180), even outbound
      await db.query(
        `INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction, from_number,
          to_number, type, body, category, priority, status, created_at, updated_at, sent_at, delivered_at,
          provider_message_id)
        SELECT bench_id('msg', ${time}, g), 'ws_00BENCH0000000000000000001', 'ch_00BENCH0000000000000000001',
          'cnv_00BENCH0000000000000000001', 'cnt_00BENCH0000000000000000001',
          CASE WHEN g % 2 = 1 THEN 'inbound' ELSE 'outbound' END,
          CASE WHEN g % 2 = 1 THEN '+4915112345678' END, '+15550100001', 'text', repeat('x', 120), 'utility', 2,
          'delivered', to_timestamp(${time} / 1000.0), to_timestamp(${time} / 1000.0),
          to_timestamp(${time} / 1000.0), to_timestamp(${time} / 1000.0),
          CASE WHEN g % 2 = 1 THEN 'wamid.' || g END
        FROM generate_series($1::int, $2::int) AS g`,
        [low, high]
      )
      await db.query(
        `INSERT INTO message_transitions (message_id, from_state, to_state, at)
        SELECT bench_id('msg', ${time}, g), 'sent', 'delivered', to_timestamp(${time} / 1000.0)
        FROM generate_series($1::int, $2::int) AS g`,
        [low, high]
      )
    }
    await db.query("VACUUM ANALYZE events, webhook_deliveries, webhook_attempts, messages, message_transitions")
    const sizes = await db.query<{ table: string; mib: number }>(
      `SELECT t AS table, round(pg_total_relation_size(t::regclass) / 1048576.0)::int AS mib
       FROM unnest(ARRAY['events', 'webhook_deliveries', 'webhook_attempts', 'messages', 'message_transitions']) AS t`
    )
    return { seed_s: seconds(started), size_mib: Object.fromEntries(sizes.rows.map((r) => [r.table, r.mib])) }
  })

  const started = performance.now()
  const applied = await migrate(target, Number.POSITIVE_INFINITY)
  const migration_s = seconds(started)

  const after = await withClient(target, async (db) => {
    const partitions: Record<string, number> = {}
    const first: Record<string, number> = {}
    for (const table of ["events", "webhook_deliveries", "webhook_attempts", "messages", "message_transitions"]) {
      const list = await Effect.runPromise(
        Partitions.partitions(table).pipe(
          Effect.provide(Database.layerPostgres(Redacted.make(target), 1)),
          Effect.scoped
        )
      )
      partitions[table] = list.length
      const count = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${list[0]!.name}`)
      first[table] = count.rows[0]!.n
    }
    const claimed = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM message_provider_ids")
    return { partitions, rows_in_first_partition: first, provider_ids_claimed: claimed.rows[0]!.n }
  })
  const line = record("partition-migration", {
    rows,
    months,
    ...seeded,
    applied: applied.map(([id, migration]) => `${id}_${migration}`),
    migration_s,
    ...after
  })
  console.log(line)
  if (keep) console.log(`kept: ${target}`)
} finally {
  if (!keep) await withClient(url, (db) => db.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))
}
