import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * One index for the queries of a channel's queue, whatever the planner believes. With 1M messages
 * autovacuum analyzes the table rarely, so the planner's view of the queue is whatever it was
 * then; while it believed the queue empty, every partial index whose condition a query implies
 * looked as cheap as the right one, and it walked them: the expiry sweep's index (every
 * undispatched message of EVERY channel, by age) for one channel's queue read, its dispatch take
 * and the backlog gauge (618, 2,272 and 13,000 pages a call with ten channels queued at 1M rows,
 * bench/RESULTS.md 11f), and `messages_unsent` or `messages_due` (every queued message of the
 * channel) for the head of one channel's queue.
 *
 * Now `messages_queue` (the channel, then the dispatch order) is the only index a query that names
 * one channel's queued messages can use:
 * - the expiry sweep's index also says `created_at IS NOT NULL`: always true of a message, and
 *   implied by the sweep's own `created_at < cutoff` (a strict comparison), but by no query of a
 *   channel's queue, which never names the age;
 * - `messages_due` goes: the due-work probe walks the head of `messages_queue` to its first due
 *   message (only retries waiting for their backoff stand before it);
 * - `messages_unsent` (queued or dispatching) becomes `messages_dispatching`: the QR cap counts the
 *   queued through `messages_queue` and the dispatching through this one.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX messages_undispatched_created`
  yield* sql`CREATE INDEX messages_expiry ON messages (created_at)
    WHERE status IN ('queued', 'failed_retryable') AND created_at IS NOT NULL`
  yield* sql`DROP INDEX messages_due`
  yield* sql`DROP INDEX messages_unsent`
  yield* sql`CREATE INDEX messages_dispatching ON messages (channel_id) WHERE status = 'dispatching'`
})
