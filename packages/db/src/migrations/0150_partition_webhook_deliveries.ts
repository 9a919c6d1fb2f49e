import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import * as Partitions from "../Partitions.js"

/**
 * Webhook deliveries and their attempts in monthly partitions by id (docs/OPERATING.md "Partitions
 * and retention"): the 30-day retention drops a month's partitions instead of deleting rows.
 * - the existing tables become the first partitions (`webhook_deliveries_before`,
 *   `webhook_attempts_before`: every delivery id before next month), the months ahead are made;
 * - `webhook_attempts` is partitioned on `delivery_id` with the same bounds, so a month of
 *   deliveries goes with its attempts; it has no primary key of its own any more (its `id` stays,
 *   from the same sequence; nothing refers to an attempt);
 * - the foreign keys from attempts to deliveries and from deliveries to events go: a partition
 *   could not be dropped while another table's rows refer to it, and both rows are written by the
 *   statement that checks their parent (an attempt only where its delivery's guarded update
 *   matched; a delivery with its event).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  yield* sql`ALTER TABLE webhook_attempts DROP CONSTRAINT IF EXISTS webhook_attempts_delivery_id_fkey`
  yield* sql`ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_event_id_fkey`
  const upper = yield* Partitions.firstUpperBound(
    "whd",
    [["webhook_deliveries", "id"], ["webhook_attempts", "delivery_id"]],
    now
  )
  yield* Partitions.partitionExisting("webhook_deliveries", "id", upper)
  yield* Partitions.partitionExisting("webhook_attempts", "delivery_id", upper)
  yield* Partitions.ensure(Partitions.DELIVERIES, now)
})
