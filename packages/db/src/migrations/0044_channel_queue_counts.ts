import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * How many messages wait (`status = 'queued'`) on each channel, kept exact by the database itself
 * so the send path's backlog refusal reads a handful of rows instead of counting a queue that can
 * hold hundreds of thousands of messages (the count grew the database's CPU per send with the
 * backlog).
 *
 * - Statement-level triggers with transition tables: whatever writes `messages` (a send, a
 *   dispatch claim, a retry back to queued, a cancellation, an expiry, a bulk delete) adjusts the
 *   count in the same transaction, once per statement and channel, not once per row.
 * - Striped: each adjustment lands on one of 8 slots of the channel chosen at random, so
 *   concurrent sends to one channel seldom wait on the same row lock; the count is the sum of the
 *   slots (a slot may go negative, the sum cannot).
 * - No foreign key: a channel's rows may outlive it harmlessly (channels are archived, not
 *   deleted), and a cascade deleting messages must never fail on the counter.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE channel_queue_counts (
    channel_id text NOT NULL,
    slot smallint NOT NULL,
    queued bigint NOT NULL,
    PRIMARY KEY (channel_id, slot)
  )`
  yield* sql`CREATE FUNCTION channel_queue_counts_apply(deltas jsonb) RETURNS void LANGUAGE sql AS $$
    INSERT INTO channel_queue_counts (channel_id, slot, queued)
    SELECT d.key, floor(random() * 8)::smallint, d.value::bigint
    FROM jsonb_each_text(deltas) d
    WHERE d.value::bigint <> 0
    ON CONFLICT (channel_id, slot) DO UPDATE SET queued = channel_queue_counts.queued + EXCLUDED.queued
  $$`
  yield* sql`CREATE FUNCTION channel_queue_counts_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM channel_queue_counts_apply(
        (SELECT jsonb_object_agg(channel_id, n) FROM (
          SELECT channel_id, count(*) AS n FROM inserted WHERE status = 'queued' GROUP BY channel_id
        ) c));
      RETURN NULL;
    END $$`
  yield* sql`CREATE FUNCTION channel_queue_counts_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM channel_queue_counts_apply(
        (SELECT jsonb_object_agg(channel_id, n) FROM (
          SELECT channel_id, -count(*) AS n FROM deleted WHERE status = 'queued' GROUP BY channel_id
        ) c));
      RETURN NULL;
    END $$`
  yield* sql`CREATE FUNCTION channel_queue_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM channel_queue_counts_apply(
        (SELECT jsonb_object_agg(channel_id, n) FROM (
          SELECT n.channel_id, sum((n.status = 'queued')::int - (o.status = 'queued')::int) AS n
          FROM after_rows n JOIN before_rows o ON o.id = n.id
          WHERE (n.status = 'queued') <> (o.status = 'queued')
          GROUP BY n.channel_id
        ) c));
      RETURN NULL;
    END $$`
  yield* sql`CREATE TRIGGER messages_queue_count_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION channel_queue_counts_on_insert()`
  yield* sql`CREATE TRIGGER messages_queue_count_delete AFTER DELETE ON messages
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION channel_queue_counts_on_delete()`
  yield* sql`CREATE TRIGGER messages_queue_count_update AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows FOR EACH STATEMENT
    EXECUTE FUNCTION channel_queue_counts_on_update()`
  // what is already queued
  yield* sql`INSERT INTO channel_queue_counts (channel_id, slot, queued)
    SELECT channel_id, 0, count(*) FROM messages WHERE status = 'queued' GROUP BY channel_id`
})
