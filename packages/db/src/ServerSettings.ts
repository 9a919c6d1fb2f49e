/**
 * Postgres settings the service depends on, read once at start on a real server and named in a
 * warning when one is off (docs/OPERATING.md "Postgres settings"). The message queue is a table:
 * every dispatch turns a `queued` row into a dead one, and the send path's probes of the queue
 * (`messages_queue`) and the shard lease rows (`cluster_locks`, refreshed every
 * 2 s) stay cheap only while autovacuum removes dead rows and refreshes the planner's statistics.
 * Without it the cost of a send grows with every message sent since the server started (measured:
 * bench/RESULTS.md "Costs as the data grows" and 16's soak). A table whose own `autovacuum_enabled`
 * is off is named too.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"

/** A row of `pg_settings` (its value as text). */
const decodeSettings = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ name: Schema.String, setting: Schema.String }))
)

/** Table names from `pg_class`. */
const decodeTables = Schema.decodeUnknown(Schema.Array(Schema.Struct({ relname: Schema.String })))

/** The settings read, by name. */
export const READ = ["autovacuum", "track_counts"] as const

/** What an hour without vacuum cost, measured (bench/RESULTS.md 16, the soak), for the warnings. */
const COST = "an hour at 10 sends a second without it: the shard leases' and the webhook deliveries' " +
  "reads a send more than doubled, 213,000 dead lease rows"

/**
 * The warnings a server's settings call for (one line each; empty when all is well).
 * `tablesOff`: this database's tables whose own `autovacuum_enabled` is off (named when the
 * server's autovacuum is on, since the first line already covers every table otherwise).
 */
export const warnings = (
  settings: ReadonlyMap<string, string>,
  tablesOff: ReadonlyArray<string> = []
): ReadonlyArray<string> => {
  const lines: Array<string> = []
  if (settings.get("autovacuum") === "off") {
    lines.push(
      "Postgres has autovacuum off: dead rows of the message queue and the shard leases are never removed and " +
        "the planner's statistics never refreshed, so every send and dispatch gets slower as messages flow (" +
        COST + "); turn it on (docs/OPERATING.md \"Postgres settings\")"
    )
  } else if (tablesOff.length > 0) {
    const named = tablesOff.slice(0, 5).join(", ") + (tablesOff.length > 5 ? ` and ${tablesOff.length - 5} more` : "")
    lines.push(
      `Postgres autovacuum is off for ${tablesOff.length} of this database's tables (${named}): their dead rows ` +
        `are never removed, so the statements that read them get slower as messages flow (${COST}); ` +
        "turn it back on: ALTER TABLE ... RESET (autovacuum_enabled) (docs/OPERATING.md \"Postgres settings\")"
    )
  }
  if (settings.get("track_counts") === "off") {
    lines.push(
      "Postgres has track_counts off: autovacuum cannot tell which tables need it; " +
        "turn it on (docs/OPERATING.md \"Postgres settings\")"
    )
  }
  return lines
}

/** Reads the settings and logs a warning for each one that is off; a failed read is logged, not fatal. */
export const check: Effect.Effect<void, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* decodeSettings(
    yield* sql`SELECT name, setting FROM pg_settings WHERE name IN ${sql.in([...READ])}`
  )
  // tables (and partitions) of this schema with `autovacuum_enabled` off in their own options
  const tablesOff = yield* decodeTables(
    yield* sql`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
        AND EXISTS (SELECT 1 FROM unnest(c.reloptions) o WHERE o ~* '^autovacuum_enabled=(false|off|no|0)$')
      ORDER BY c.relname`
  )
  for (const line of warnings(new Map(rows.map((r) => [r.name, r.setting])), tablesOff.map((t) => t.relname))) {
    yield* Effect.logWarning(line)
  }
}).pipe(
  Effect.catchAll((error) => Effect.logDebug("could not read the Postgres settings", error))
)
