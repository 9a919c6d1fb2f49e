import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import * as Partitions from "../Partitions.js"

/** The queue counters' statement triggers (0044), as they are made on `messages`. */
const QUEUE_COUNT_TRIGGERS = [
  `CREATE TRIGGER messages_queue_count_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION channel_queue_counts_on_insert()`,
  `CREATE TRIGGER messages_queue_count_delete AFTER DELETE ON messages
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION channel_queue_counts_on_delete()`,
  `CREATE TRIGGER messages_queue_count_update AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows FOR EACH STATEMENT
    EXECUTE FUNCTION channel_queue_counts_on_update()`
]

/**
 * Messages and their timeline in monthly partitions by id (docs/OPERATING.md "Partitions and
 * retention"): `MESSAGE_RETENTION_DAYS` drops a month's partitions instead of deleting rows.
 * - `message_provider_ids`: the provider's id of each inbound message, unique per channel, with
 *   the message's id. It replaces the unique index `messages_provider_message` (a partitioned
 *   table's unique keys must hold its partition key, so that index could not span the months):
 *   a message heard twice is recorded once, whichever months the two hearings fall in. Filled
 *   from the messages that have one (a read of the inbound messages, in the upgrade's lock);
 *   kept when their message's month is dropped, so a message heard again after retention is not
 *   recorded a second time.
 * - the existing tables become the first partitions (`messages_before`,
 *   `message_transitions_before`: every message id before next month), the months ahead are
 *   made. No row is copied; the old unique index stays on `messages_before` only.
 * - `message_transitions` is partitioned on `message_id` with the same bounds, so a month of
 *   messages goes with its timeline; it keeps its `id` (the same sequence: the timeline's order)
 *   without a primary key (nothing refers to a transition). Its foreign key to messages goes: a
 *   partition could not be dropped while another table's rows refer to it, and every timeline row
 *   is written by the statement that writes or locks its message.
 * - the queue counters' statement triggers (0044) move to the partitioned table: statements name
 *   the parent, whose statement triggers see the rows of every partition.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  yield* sql`CREATE TABLE message_provider_ids (
      channel_id text NOT NULL,
      provider_message_id text NOT NULL,
      message_id text NOT NULL,
      PRIMARY KEY (channel_id, provider_message_id)
    )`
  yield* sql`INSERT INTO message_provider_ids (channel_id, provider_message_id, message_id)
    SELECT channel_id, provider_message_id, id FROM messages WHERE provider_message_id IS NOT NULL`
  yield* sql`ALTER TABLE message_transitions DROP CONSTRAINT IF EXISTS message_transitions_message_id_fkey`
  yield* sql`DROP TRIGGER IF EXISTS messages_queue_count_insert ON messages`
  yield* sql`DROP TRIGGER IF EXISTS messages_queue_count_delete ON messages`
  yield* sql`DROP TRIGGER IF EXISTS messages_queue_count_update ON messages`
  const upper = yield* Partitions.firstUpperBound(
    "msg",
    [["messages", "id"], ["message_transitions", "message_id"]],
    now
  )
  yield* Partitions.partitionExisting("messages", "id", upper)
  yield* Partitions.partitionExisting("message_transitions", "message_id", upper)
  for (const trigger of QUEUE_COUNT_TRIGGERS) yield* sql.unsafe(trigger)
  yield* Partitions.ensure(Partitions.MESSAGES, now)
})
