import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * When the current QR pairing began (`qr/start`), shown in the pairing status; and recent
 * dispatches by time, which a QR channel's new owner reads to keep per-recipient spacing.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE channels ADD COLUMN pairing_started_at timestamptz`
  yield* sql`CREATE INDEX message_transitions_dispatching ON message_transitions (at) WHERE to_state = 'dispatching'`
})
