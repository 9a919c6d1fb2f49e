import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Contacts that only group chats brought in (docs/API.md "Contacts", "Plan limits"): a participant
 * a group report, a group message or a mention made a contact of is `group_chat_only` and does not
 * count against the plan's `contacts` limit until it has a 1:1 conversation (`ContactCtes.counted`;
 * the index finds a contact's conversations). Existing contacts that are group chat participants
 * with nothing of their own (no 1:1 conversation, name, e-mail, attributes, tags or contact group)
 * are marked so too.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE contacts ADD COLUMN group_chat_only boolean NOT NULL DEFAULT false`
  yield* sql`CREATE INDEX conversations_contact ON conversations (contact_id) WHERE contact_id IS NOT NULL`
  yield* sql`UPDATE contacts c SET group_chat_only = true
    WHERE EXISTS (SELECT 1 FROM group_chat_participants p WHERE p.contact_id = c.id)
      AND NOT EXISTS (SELECT 1 FROM conversations v WHERE v.contact_id = c.id)
      AND NOT EXISTS (SELECT 1 FROM contact_group_members m WHERE m.contact_id = c.id)
      AND c.name IS NULL AND c.email IS NULL AND c.attributes = '{}'::jsonb AND cardinality(c.tags) = 0`
})
