/**
 * Postgres settings the service depends on, read once at start on a real server and named in a
 * warning when one is off (docs/OPERATING.md "Postgres settings"). The message queue is a table:
 * every dispatch turns a `queued` row into a dead one, and the send path's probes of the queue
 * (`messages_queue`) and the shard lease rows (`cluster_locks`, refreshed every
 * 2 s) stay cheap only while autovacuum removes dead rows and refreshes the planner's statistics.
 * Without it the cost of a send grows with every message sent since the server started (measured:
 * bench/RESULTS.md "Costs as the data grows").
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"

/** A row of `pg_settings` (its value as text). */
const decodeSettings = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ name: Schema.String, setting: Schema.String }))
)

/** The settings read, by name. */
export const READ = ["autovacuum", "track_counts"] as const

/** The warnings a server's settings call for (one line each; empty when all is well). */
export const warnings = (settings: ReadonlyMap<string, string>): ReadonlyArray<string> => {
  const lines: Array<string> = []
  if (settings.get("autovacuum") === "off") {
    lines.push(
      "Postgres has autovacuum off: dead rows of the message queue and the shard leases are never removed and " +
        "the planner's statistics never refreshed, so every send and dispatch gets slower as messages flow; " +
        "turn it on (docs/OPERATING.md \"Postgres settings\")"
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
  for (const line of warnings(new Map(rows.map((r) => [r.name, r.setting])))) {
    yield* Effect.logWarning(line)
  }
}).pipe(
  Effect.catchAll((error) => Effect.logDebug("could not read the Postgres settings", error))
)
