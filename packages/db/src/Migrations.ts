/**
 * Forward-only numbered migrations, run at start-up by every node (the migrator takes a table
 * lock, so concurrent starts are safe). Add a file `NNNN_what.ts` and list it here.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Effect, Layer, Schedule } from "effect"
import m0001 from "./migrations/0001_create_workspaces.js"
import m0002 from "./migrations/0002_create_events.js"
import m0010 from "./migrations/0010_create_identity.js"
import m0011 from "./migrations/0011_create_api_keys.js"
import m0012 from "./migrations/0012_create_entitlement_overrides.js"
import m0020 from "./migrations/0020_create_webhooks.js"
import m0021 from "./migrations/0021_index_webhook_sweeps.js"
import m0030 from "./migrations/0030_create_messaging.js"
import m0031 from "./migrations/0031_provider_ids_and_sandbox_network.js"
import m0032 from "./migrations/0032_message_sweep_indexes.js"
import m0033 from "./migrations/0033_index_awaiting_receipts.js"
import m0040 from "./migrations/0040_create_qr_auth_state.js"
import m0041 from "./migrations/0041_channel_pairing_started.js"
import m0042 from "./migrations/0042_create_qr_safety_limits.js"
import m0043 from "./migrations/0043_sandbox_verify_failures.js"
import m0044 from "./migrations/0044_channel_queue_counts.js"
import m0045 from "./migrations/0045_idempotency_leases.js"
import m0046 from "./migrations/0046_sql_ids.js"
import m0047 from "./migrations/0047_sandbox_receipt_times.js"
import m0050 from "./migrations/0050_contacts_address_book.js"
import m0051 from "./migrations/0051_contact_imports.js"
import m0060 from "./migrations/0060_create_templates.js"
import m0070 from "./migrations/0070_conversations_inbox.js"
import m0080 from "./migrations/0080_message_kinds_and_media.js"
import m0081 from "./migrations/0081_whatsapp_lids.js"
import m0090 from "./migrations/0090_qr_warm_up.js"
import m0091 from "./migrations/0091_qr_restrictions.js"
import m0100 from "./migrations/0100_media_usage_index.js"
import m0110 from "./migrations/0110_qr_recipient_checks.js"
import m0120 from "./migrations/0120_one_index_per_channel_queue.js"
import m0137 from "./migrations/0137_channel_call_policy.js"
import m0150 from "./migrations/0150_partition_webhook_deliveries.js"
import m0151 from "./migrations/0151_partition_events.js"
import m0152 from "./migrations/0152_drop_delivery_purge_index.js"
import m0160 from "./migrations/0160_group_chats.js"
import m0170 from "./migrations/0170_group_chat_conversations.js"
import m0180 from "./migrations/0180_partition_messages.js"
import m0190 from "./migrations/0190_group_chat_seats_outlive_contacts.js"
import m0191 from "./migrations/0191_contacts_group_chat_only.js"
import m0192 from "./migrations/0192_conversation_unread_from.js"
import m0193 from "./migrations/0193_contacts_limit_lock.js"
import * as Partitions from "./Partitions.js"

export const migrations = {
  "0001_create_workspaces": m0001,
  "0002_create_events": m0002,
  "0010_create_identity": m0010,
  "0011_create_api_keys": m0011,
  "0012_create_entitlement_overrides": m0012,
  "0020_create_webhooks": m0020,
  "0021_index_webhook_sweeps": m0021,
  "0030_create_messaging": m0030,
  "0031_provider_ids_and_sandbox_network": m0031,
  "0032_message_sweep_indexes": m0032,
  "0033_index_awaiting_receipts": m0033,
  "0040_create_qr_auth_state": m0040,
  "0041_channel_pairing_started": m0041,
  "0042_create_qr_safety_limits": m0042,
  "0043_sandbox_verify_failures": m0043,
  "0044_channel_queue_counts": m0044,
  "0045_idempotency_leases": m0045,
  "0046_sql_ids": m0046,
  "0047_sandbox_receipt_times": m0047,
  "0050_contacts_address_book": m0050,
  "0051_contact_imports": m0051,
  "0060_create_templates": m0060,
  "0070_conversations_inbox": m0070,
  "0080_message_kinds_and_media": m0080,
  "0081_whatsapp_lids": m0081,
  "0090_qr_warm_up": m0090,
  "0091_qr_restrictions": m0091,
  "0100_media_usage_index": m0100,
  "0110_qr_recipient_checks": m0110,
  "0120_one_index_per_channel_queue": m0120,
  "0137_channel_call_policy": m0137,
  "0150_partition_webhook_deliveries": m0150,
  "0151_partition_events": m0151,
  "0152_drop_delivery_purge_index": m0152,
  "0160_group_chats": m0160,
  "0170_group_chat_conversations": m0170,
  "0180_partition_messages": m0180,
  "0190_group_chat_seats_outlive_contacts": m0190,
  "0191_contacts_group_chat_only": m0191,
  "0192_conversation_unread_from": m0192,
  "0193_contacts_limit_lock": m0193
}

export const TABLE = "switchboard_migrations"

const ordered = Object.entries(migrations)
  .map(([key, effect]) => {
    const [, id, name] = /^(\d+)_(.+)$/.exec(key)!
    return { id: Number(id), name: name!, effect: effect as Effect.Effect<unknown, unknown, SqlClient.SqlClient> }
  })
  .sort((a, b) => a.id - b.id)

/**
 * Runs every migration not recorded yet, in id order, in one transaction; returns the ones
 * applied. Unlike `@effect/sql`'s Migrator, which skips any id at or below the latest applied
 * one, a migration is applied even when a higher id already was: branches own id blocks
 * (0010-0019, 0020-0029, ...) and merge in any order, so on an existing database a new 0021 can
 * arrive after 0030. Same table layout as the Migrator's, so existing databases carry on.
 */
export const run: Effect.Effect<ReadonlyArray<readonly [id: number, name: string]>, SqlError, SqlClient.SqlClient> =
  Effect.suspend(() => runThrough(Number.POSITIVE_INFINITY))

/**
 * `run`, but only the migrations whose id is at most `lastId`: a database as an older version of
 * the code left it (test/embeddedTemplate.test.ts makes an older migrated template with it).
 */
export const runThrough = (
  lastId: number
): Effect.Effect<ReadonlyArray<readonly [id: number, name: string]>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
      migration_id integer primary key,
      created_at timestamp with time zone not null default now(),
      name text not null
    )`
    return yield* sql.withTransaction(Effect.gen(function*() {
      // concurrent starts: the second waits here, then finds everything recorded
      yield* sql`LOCK TABLE ${sql(TABLE)} IN ACCESS EXCLUSIVE MODE`
      const rows = yield* sql<{ migration_id: number }>`SELECT migration_id FROM ${sql(TABLE)}`
      const done = new Set(rows.map((r) => Number(r.migration_id)))
      const pending = ordered.filter((m) => m.id <= lastId && !done.has(m.id))
      if (pending.length > 0) {
        yield* Effect.logInfo(`applying ${pending.length} database migration(s) (a first start or an upgrade)`)
      }
      for (const m of pending) {
        yield* m.effect.pipe(
          Effect.catchAll((error) =>
            Effect.dieMessage(`migration ${m.id}_${m.name} failed: ${String((error as Error)?.message ?? error)}`)
          )
        )
        yield* sql`INSERT INTO ${sql(TABLE)} (migration_id, name) VALUES (${m.id}, ${m.name})`
      }
      // the months ahead of the partitioned history tables, at every start (the runner's
      // PartitionKeeper makes them too; a process started after months away finds them made)
      const now = yield* Clock.currentTimeMillis
      for (const layout of Partitions.LAYOUTS) yield* Partitions.ensure(layout, now)
      return pending.map((m) => [m.id, m.name] as const)
    }))
  }).pipe(
    // two processes creating the migrations table at the same instant: the loser retries
    Effect.retry({ times: 3, schedule: Schedule.spaced("200 millis"), while: (e) => e._tag === "SqlError" })
  )

/** The migrations this database has recorded as applied (id and name), in id order. */
export const applied: Effect.Effect<ReadonlyArray<readonly [id: number, name: string]>, SqlError, SqlClient.SqlClient> =
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ migration_id: number; name: string }>`
      SELECT migration_id, name FROM ${sql(TABLE)} ORDER BY migration_id`
    return rows.map((r) => [Number(r.migration_id), r.name] as const)
  })

export const layer = Layer.effectDiscard(
  run.pipe(
    Effect.tap((applied) =>
      applied.length > 0
        ? Effect.logDebug("migrations applied").pipe(
          Effect.annotateLogs("migrations", applied.map(([id, name]) => `${id}_${name}`))
        )
        : Effect.void
    ),
    Effect.orDie
  )
)
