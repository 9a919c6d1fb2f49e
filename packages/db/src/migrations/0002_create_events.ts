import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The outbox: one row per event, its envelope stored as the exact bytes every delivery sends.
 * Written in the same transaction as the change it reports.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE events (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      type text NOT NULL,
      object_id text NOT NULL,
      envelope text NOT NULL,
      is_test boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX events_workspace_created ON events (workspace_id, created_at DESC, id DESC)`
})
