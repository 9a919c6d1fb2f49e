/**
 * The LID merge (docs/API.md "Contacts"): a contact WhatsApp named by its LID alone is folded into
 * the contact of the phone number behind that LID, once the mapping is known. Its conversations,
 * messages (and group messages' mentions of it), notes, group memberships and places in group chats
 * move over; on a channel where both had a conversation,
 * the LID contact's is folded into the phone contact's (its messages and notes move, its times are
 * kept when later); the phone contact keeps its own name, e-mail and attributes and takes the
 * LID contact's where it has none, and the union of both tags; its group chat seats move to the
 * phone contact (the higher role where both sit in one); the LID contact is deleted.
 *
 * Several statements (a row cannot be updated twice in one), so run it inside a transaction: the
 * caller's (`LidMappings.learn`, with the mapping and the `contact.updated` event).
 */
import type { SqlClient } from "@effect/sql"
import { type Contacts, Ids } from "@switchboard/domain"
import { Effect } from "effect"
import * as Partitions from "../Partitions.js"

/**
 * `column` (a message id) among the ids of the messages that can name contact `contactId`: its
 * own, its conversations' and those mentioning it. None is older than the contact (made when it
 * was first heard of or added, its id's time; a day of clock slack: `Partitions.idsFrom`), so the
 * statement reads only the months since, not every month of history.
 */
export const messagesSinceContact = (sql: SqlClient.SqlClient, column: string, contactId: string) => {
  const made = Ids.idTime(contactId)
  return made === undefined ? sql`true` : Partitions.idsFrom(sql, "msg", column, made)
}

export interface LidMergeInput {
  /** the contact known by LID alone */
  readonly from: Contacts.Contact["id"]
  /** the phone number's contact, which remains */
  readonly into: Contacts.Contact["id"]
  /** the phone number (E.164): inbound messages of `from` without one show it */
  readonly phone: string
  readonly lid: string
  readonly now: string
}

/** The merge's statements on `sql`, in order (see the module's comment). */
export const lidMerge = (sql: SqlClient.SqlClient, input: LidMergeInput) =>
  Effect.gen(function*() {
    const { from, into, now } = input
    // every message statement below reads messages of `from`'s (its conversations', its own, its
    // mentions): only the months since it was made
    const sinceFrom = (column: string) => messagesSinceContact(sql, column, from)
    // a channel where both have a conversation: one conversation, the phone contact's (the unread
    // inbound messages moved lower its `unread_from_id`: migration 0192's trigger)
    yield* sql`UPDATE messages m SET conversation_id = i.id
      FROM conversations f JOIN conversations i ON i.channel_id = f.channel_id AND i.contact_id = ${into}
      WHERE f.contact_id = ${from} AND m.conversation_id = f.id AND ${sinceFrom("m.id")}`
    yield* sql`UPDATE conversation_notes n SET conversation_id = i.id
      FROM conversations f JOIN conversations i ON i.channel_id = f.channel_id AND i.contact_id = ${into}
      WHERE f.contact_id = ${from} AND n.conversation_id = f.id`
    yield* sql`UPDATE conversations i SET
        last_message_at = GREATEST(i.last_message_at, f.last_message_at),
        last_inbound_at = GREATEST(i.last_inbound_at, f.last_inbound_at), updated_at = ${now}
      FROM conversations f WHERE f.channel_id = i.channel_id AND f.contact_id = ${from} AND i.contact_id = ${into}`
    yield* sql`DELETE FROM conversations f WHERE f.contact_id = ${from}
      AND EXISTS (SELECT 1 FROM conversations i WHERE i.channel_id = f.channel_id AND i.contact_id = ${into})`
    yield* sql`UPDATE conversations SET contact_id = ${into}, updated_at = ${now} WHERE contact_id = ${from}`
    yield* sql`UPDATE messages SET contact_id = ${into},
        from_number = CASE WHEN direction = 'inbound' THEN COALESCE(from_number, ${input.phone}) ELSE from_number END
      WHERE contact_id = ${from} AND ${sinceFrom("id")}`
    // group chats (docs/API.md "Group chats"): the mentions of it in the messages of its group
    // chats' conversations, and its places among their participants
    yield* sql`UPDATE messages m SET mentions = (SELECT jsonb_agg(DISTINCT CASE WHEN e = to_jsonb(${from}::text)
        THEN to_jsonb(${into}::text) ELSE e END) FROM jsonb_array_elements(m.mentions) e)
      WHERE m.conversation_id IN (SELECT c.id FROM conversations c
          JOIN group_chat_participants p ON p.group_chat_id = c.group_chat_id WHERE p.contact_id = ${from})
        AND m.mentions @> jsonb_build_array(${from}::text) AND ${sinceFrom("m.id")}`
    yield* sql`INSERT INTO group_chat_participants (group_chat_id, contact_id, role)
      SELECT group_chat_id, ${into}, role FROM group_chat_participants WHERE contact_id = ${from}
      ON CONFLICT DO NOTHING`
    yield* sql`INSERT INTO contact_group_members (group_id, contact_id, created_at)
      SELECT group_id, ${into}, created_at FROM contact_group_members WHERE contact_id = ${from}
      ON CONFLICT DO NOTHING`
    // its group chat seats: the number's contact takes them (the higher role where it has one too)
    yield* sql`INSERT INTO group_chat_participants (group_chat_id, contact_id, role)
      SELECT group_chat_id, ${into}, role FROM group_chat_participants WHERE contact_id = ${from}
      ON CONFLICT (group_chat_id, contact_id) DO UPDATE SET role = CASE
        WHEN 'superadmin' IN (group_chat_participants.role, excluded.role) THEN 'superadmin'
        WHEN 'admin' IN (group_chat_participants.role, excluded.role) THEN 'admin'
        ELSE 'member' END`
    yield* sql`UPDATE contacts i SET name = COALESCE(i.name, f.name), email = COALESCE(i.email, f.email),
        attributes = f.attributes || i.attributes,
        tags = ARRAY(SELECT DISTINCT t FROM unnest(i.tags || f.tags) AS u(t) ORDER BY t), updated_at = ${now}
      FROM contacts f WHERE i.id = ${into} AND f.id = ${from}`
    yield* sql`DELETE FROM contacts WHERE id = ${from}`
    yield* sql`UPDATE contacts SET whatsapp_lid = ${input.lid} WHERE id = ${into}`
  })
