import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The sweeper runs every second on every deployment, and on the embedded database it shares the
 * one connection with everything else: its questions must be index lookups, not scans, however
 * long the queues grow.
 * - due work per channel: queued and due (`next_attempt_at` null means due now);
 * - expiry: undispatched messages by age;
 * - receipts the sandbox network reported but a message never recorded: recent reports only.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX messages_due ON messages (channel_id, (COALESCE(next_attempt_at, '-infinity'::timestamptz)))
    WHERE status = 'queued'`
  yield* sql`CREATE INDEX messages_undispatched_created ON messages (created_at)
    WHERE status IN ('queued', 'failed_retryable')`
  yield* sql`CREATE INDEX sandbox_deliveries_sent ON sandbox_deliveries (sent_at) WHERE sent_at IS NOT NULL`
})
