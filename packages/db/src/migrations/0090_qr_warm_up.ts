import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The warm-up of newly linked QR numbers (docs/LIMITS.md, "Number protection"): when a channel's
 * number was linked (a channel linked before this migration counts from its creation, so one
 * created less than 14 days ago warms up for the rest of its 14 days), and the operators'
 * per-channel overrides (off, or a lower daily ceiling).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE channels ADD COLUMN qr_linked_at timestamptz`
  yield* sql`UPDATE channels SET qr_linked_at = created_at WHERE provider = 'qr' AND phone_number IS NOT NULL`
  yield* sql`
    CREATE TABLE qr_warm_up_overrides (
      channel_id text PRIMARY KEY REFERENCES channels (id),
      workspace_id text NOT NULL REFERENCES workspaces (id),
      mode text NOT NULL CHECK (mode IN ('off', 'capped')),
      max_per_day integer CHECK (max_per_day >= 0),
      updated_at timestamptz NOT NULL,
      CHECK ((mode = 'capped') = (max_per_day IS NOT NULL))
    )`
})
