import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The sandbox network fixes a message's receipt times when it accepts it (one write per dispatch,
 * none per receipt), so `read_at` is no longer "not reported yet": a reconnecting channel replays
 * the receipts of what was accepted in the last minutes, by acceptance time.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX IF EXISTS sandbox_deliveries_unfinished`
  yield* sql`CREATE INDEX sandbox_deliveries_recent ON sandbox_deliveries (channel_id, accepted_at)
    WHERE accepted_at IS NOT NULL`
})
