import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Messages in group chats (docs/API.md "Group chats"): a group chat has one conversation per
 * channel, keyed by the group chat (`group_chat_id`, `contact_id` null); its messages carry the
 * group chat, inbound ones the participant who wrote as `contact_id` and the participants they
 * mention (`mentions`, contact ids); an outbound one to a group chat has no contact. The check is
 * added NOT VALID and validated after (a scan without the write lock).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE conversations ALTER COLUMN contact_id DROP NOT NULL,
    ADD COLUMN group_chat_id text REFERENCES group_chats (id)`
  yield* sql`ALTER TABLE conversations ADD CONSTRAINT conversations_one_party
    CHECK ((contact_id IS NULL) <> (group_chat_id IS NULL)) NOT VALID`
  yield* sql`ALTER TABLE conversations VALIDATE CONSTRAINT conversations_one_party`
  yield* sql`CREATE UNIQUE INDEX conversations_channel_group_chat ON conversations (channel_id, group_chat_id)
    WHERE group_chat_id IS NOT NULL`
  yield* sql`ALTER TABLE messages ALTER COLUMN contact_id DROP NOT NULL,
    ADD COLUMN group_chat_id text, ADD COLUMN mentions jsonb`
})
