import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The sweeper also wakes channels whose outbound messages stopped at `sent` or `delivered` (the
 * runner holding their receipt timers died): an index lookup by age, like the other sweeps.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX messages_awaiting_read ON messages (updated_at)
    WHERE direction = 'outbound' AND status IN ('sent', 'delivered')`
})
