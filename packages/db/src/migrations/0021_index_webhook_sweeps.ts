import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Indexes for the queries the webhook sweeper runs on its own schedule, so their cost follows
 * the work waiting, not the 30 days of delivery history:
 * - every second: endpoints with due pending deliveries (`next_attempt_at` without an endpoint);
 * - every second: attempts left `delivering` by a dead runner;
 * - every 10 minutes: the purge of deliveries older than 30 days.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX webhook_deliveries_pending_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_delivering ON webhook_deliveries (updated_at) WHERE status = 'delivering'`
  yield* sql`CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at)`
})
