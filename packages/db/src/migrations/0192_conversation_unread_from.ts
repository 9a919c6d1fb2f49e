import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Where a conversation's unread inbound messages start (docs/OPERATING.md "Partitions and
 * retention"): `conversations.unread_from_id`, a message id at or before the id of every inbound
 * message of the conversation not read yet (`read_at` NULL); NULL when none is unread. Marking a
 * conversation read (`MessagesRepo.markInboundRead`) reads only the months from it, not every
 * month of history: an inbound message's `created_at` is WhatsApp's time and a LID merge moves
 * older messages in, so neither the read marker nor a message's time bounds the ids.
 * - Lowered by the database itself, like the queue counters (0044): a row trigger on `messages`,
 *   for an unread inbound message written into a conversation (an insert, or a LID merge moving
 *   one in: `UPDATE OF conversation_id`). It locks the conversation's row first (`NO KEY UPDATE`;
 *   an inbound message's arrival holds that row already), and a read locks it too: a read either
 *   sees the message or is followed by the trigger's lowering.
 * - Raised by the read: `markInboundRead` sets it to the first inbound message left unread.
 * - The conversations of before this migration start at `''`, before every id (their first read
 *   reads every month once, as before, and sets it): no read of the history in the upgrade's lock.
 *   A conversation made since starts at NULL (nothing unread), lowered by its first inbound message.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE conversations ADD COLUMN unread_from_id text DEFAULT ''`
  yield* sql`ALTER TABLE conversations ALTER COLUMN unread_from_id DROP DEFAULT`
  yield* sql`CREATE FUNCTION conversations_unread_from() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      current_from text;
    BEGIN
      SELECT unread_from_id INTO current_from FROM conversations WHERE id = NEW.conversation_id
        FOR NO KEY UPDATE;
      IF current_from IS NULL OR current_from > NEW.id THEN
        UPDATE conversations SET unread_from_id = NEW.id WHERE id = NEW.conversation_id;
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`CREATE TRIGGER messages_unread_from AFTER INSERT OR UPDATE OF conversation_id ON messages
    FOR EACH ROW WHEN (NEW.direction = 'inbound' AND NEW.read_at IS NULL)
    EXECUTE FUNCTION conversations_unread_from()`
})
