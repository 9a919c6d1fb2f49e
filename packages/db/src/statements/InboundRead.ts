/**
 * Marking a conversation's inbound messages read (`MessagesRepo.markInboundRead`) from where its
 * unread messages start: `conversations.unread_from_id` (migration 0192), a message id at or before
 * every inbound message of the conversation not read yet (NULL when none is), so the statement
 * reads only the months since, not every month of history (an inbound message's `created_at` is
 * WhatsApp's time and a LID merge moves older messages in: neither bounds the ids). A trigger on
 * `messages` lowers it for an unread inbound message written into the conversation (an arrival, a
 * LID merge's move); the read raises it to the first message it leaves unread.
 *
 * The conversation's row is locked first, as that trigger locks it: run it in a transaction (the
 * read marker's, `Conversations.markRead`), so a message written meanwhile is either marked here
 * or lowers the bound after the commit.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { decodeMarkedRead, decodeUnreadFrom } from "../rows/MessageRows.js"

export interface InboundReadInput {
  readonly conversationId: string
  /** only the messages up to this `created_at`; null: every one */
  readonly upTo: string | null
  readonly now: string
}

/** Marks them (see the module's comment); answers the messages marked, where their receipts go. */
export const inboundRead = (sql: SqlClient.SqlClient, input: InboundReadInput) =>
  Effect.gen(function*() {
    const [conversation] = yield* decodeUnreadFrom(
      yield* sql`SELECT unread_from_id FROM conversations WHERE id = ${input.conversationId} FOR NO KEY UPDATE`
    )
    const from = conversation?.unread_from_id ?? null
    // nothing unread: no message is read at all
    if (from === null) return []
    // the conversation's inbound messages not read yet (`m` their alias), from the bound on
    const unread = (m: string) => {
      const a = sql.literal(m)
      return sql`${a}.conversation_id = ${input.conversationId} AND ${a}.direction = 'inbound'
        AND ${a}.read_at IS NULL AND ${a}.id >= ${from}`
    }
    // the first of them this read leaves unread: those after `upTo` (the marking's snapshot)
    const left = input.upTo === null
      ? sql`NULL::text`
      : sql`(SELECT min(u.id) FROM messages u WHERE ${unread("u")} AND u.created_at > ${input.upTo})`
    return yield* decodeMarkedRead(
      yield* sql`WITH marked AS (
        UPDATE messages m SET read_at = ${input.now}, updated_at = ${input.now}
        WHERE ${unread("m")} ${input.upTo === null ? sql`` : sql`AND m.created_at <= ${input.upTo}`}
        RETURNING m.id, m.provider_message_id, m.from_number, m.sender_lid, m.group_chat_id
      ), bound AS (
        UPDATE conversations c SET unread_from_id = n.first_id FROM (SELECT ${left} AS first_id) n
        WHERE c.id = ${input.conversationId} AND c.unread_from_id IS DISTINCT FROM n.first_id
      )
      SELECT marked.id, marked.provider_message_id, marked.from_number, marked.sender_lid,
        (SELECT g.whatsapp_group_id FROM group_chats g WHERE g.id = marked.group_chat_id) AS whatsapp_group_id
      FROM marked`
    )
  })
