import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Per-workspace entitlement overrides set by operators; the value is JSON (null = unlimited). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE entitlement_overrides (
      workspace_id text NOT NULL REFERENCES workspaces (id),
      entitlement text NOT NULL,
      value jsonb,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, entitlement)
    )`
})
