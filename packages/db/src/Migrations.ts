/**
 * Forward-only numbered migrations, run at start-up by every node (the migrator takes a table
 * lock, so concurrent starts are safe). Add a file `NNNN_what.ts` and list it here.
 */
import { Migrator } from "@effect/sql"
import { Effect, Layer, Schedule } from "effect"
import m0001 from "./migrations/0001_create_workspaces.js"
import m0002 from "./migrations/0002_create_events.js"
import m0010 from "./migrations/0010_create_identity.js"
import m0011 from "./migrations/0011_create_api_keys.js"
import m0012 from "./migrations/0012_create_entitlement_overrides.js"
import m0040 from "./migrations/0040_create_qr_auth_state.js"

export const migrations = {
  "0001_create_workspaces": m0001,
  "0002_create_events": m0002,
  "0010_create_identity": m0010,
  "0011_create_api_keys": m0011,
  "0012_create_entitlement_overrides": m0012,
  "0040_create_qr_auth_state": m0040
}

export const TABLE = "switchboard_migrations"

/** Runs the pending migrations; returns the ones applied. */
export const run = Migrator.make({})({
  loader: Migrator.fromRecord(migrations),
  table: TABLE
}).pipe(
  // two processes creating the migrations table at the same instant: the loser retries
  Effect.retry({ times: 3, schedule: Schedule.spaced("200 millis"), while: (e) => e._tag === "SqlError" })
)

export const layer = Layer.effectDiscard(
  run.pipe(
    Effect.tap((applied) =>
      applied.length > 0
        ? Effect.logInfo("migrations applied").pipe(Effect.annotateLogs("migrations", applied.map(([id, name]) => `${id}_${name}`)))
        : Effect.void
    ),
    Effect.orDie
  )
)
