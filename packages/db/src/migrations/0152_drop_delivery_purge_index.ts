import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * `webhook_deliveries_created` (0021) served the row-by-row purge of deliveries older than 30 days,
 * which dropping month partitions replaced (0150, docs/OPERATING.md "Partitions and retention"): no
 * statement reads it any more, and every delivery written kept it up to date.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX IF EXISTS webhook_deliveries_created`
})
