import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A group chat's participants outlive a deleted contact (docs/API.md "Group chats"): deleting a
 * contact leaves its seats, `contact_id` null, with the number and LID it had (`phone_number`,
 * `whatsapp_lid`, kept only for such a seat), until WhatsApp next reports the group. The primary
 * key becomes a unique index (a null `contact_id` is distinct), which `ON CONFLICT (group_chat_id,
 * contact_id)` still names.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE group_chat_participants DROP CONSTRAINT group_chat_participants_pkey,
    ALTER COLUMN contact_id DROP NOT NULL, ADD COLUMN phone_number text, ADD COLUMN whatsapp_lid text`
  yield* sql`CREATE UNIQUE INDEX group_chat_participants_seat ON group_chat_participants (group_chat_id, contact_id)`
  // the seats of a contact, found when it is deleted or merged
  yield* sql`CREATE INDEX group_chat_participants_contact ON group_chat_participants (contact_id)`
})
