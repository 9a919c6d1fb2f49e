/**
 * The conversation a message arrives in, as CTEs of one statement (`conversationArrivalCtes`): a
 * contact's conversation on a channel, or a group chat's (docs/API.md "Group chats"), created when
 * missing and opened again when closed. `ConversationsRepo.upsertConversation` runs it alone for an
 * inbound message, `SendWritesRepo` composes it into the send's one statement.
 */
import type { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"

/**
 * The conversation of (channel, contact) for a message, as the CTEs of one statement (the send
 * composes them, `SendWritesRepo`): the row locked (`conversation_current`), opened again when it
 * exists (`conversation_moved`) or created when missing (`conversation_created`, under `id`), and
 * `conversation (id, prior)`: its id and its status before the message (`NULL`: created).
 * `contact` is a relation with the contact's `id` (an earlier CTE, or one value): none, nothing
 * written. With `groupChatId`, the conversation is the group chat's instead (`contact`, a row of
 * nulls, only guards it).
 * Empty only when a concurrent first message inserted the row: a next statement sees it.
 */
export const conversationArrivalCtes = (
  sql: SqlClient.SqlClient,
  input: {
    readonly id: string
    readonly workspaceId: string
    readonly channelId: string
    readonly contact: Statement.Fragment
    /** a group chat's conversation (docs/API.md "Group chats"): keyed by it, without a contact */
    readonly groupChatId?: string | undefined
    readonly now: string
    readonly inbound: boolean
  }
) => {
  const { channelId, contact, groupChatId, id, inbound, now, workspaceId } = input
  if (groupChatId !== undefined) {
    return sql`conversation_current AS (
      SELECT id, status FROM conversations
      WHERE channel_id = ${channelId} AND group_chat_id = ${groupChatId} AND EXISTS (SELECT 1 FROM ${contact})
      FOR UPDATE
    ), ${arrivalMoves(sql, input)}, conversation_created AS (
      INSERT INTO conversations (id, workspace_id, channel_id, contact_id, group_chat_id, status, last_message_at,
        last_inbound_at, created_at, updated_at)
      SELECT ${id}, ${workspaceId}, ${channelId}, NULL, ${groupChatId}, 'open', ${now},
        ${inbound ? now : null}::timestamptz, ${now}, ${now}
      FROM ${contact} WHERE NOT EXISTS (SELECT 1 FROM conversation_current)
      ON CONFLICT (channel_id, group_chat_id) WHERE group_chat_id IS NOT NULL DO NOTHING
      RETURNING id, NULL::text AS prior
    ), conversation AS (
      SELECT id, prior FROM conversation_moved UNION ALL SELECT id, prior FROM conversation_created
    )`
  }
  return sql`conversation_current AS (
      SELECT id, status FROM conversations
      WHERE channel_id = ${channelId} AND contact_id = (SELECT id FROM ${contact}) FOR UPDATE
    ), ${arrivalMoves(sql, input)}, conversation_created AS (
      INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status, last_message_at,
        last_inbound_at, created_at, updated_at)
      SELECT ${id}, ${workspaceId}, ${channelId}, k.id, 'open', ${now}, ${inbound ? now : null}::timestamptz,
        ${now}, ${now}
      FROM ${contact} WHERE NOT EXISTS (SELECT 1 FROM conversation_current)
      ON CONFLICT (channel_id, contact_id) DO NOTHING
      RETURNING id, NULL::text AS prior
    ), conversation AS (
      SELECT id, prior FROM conversation_moved UNION ALL SELECT id, prior FROM conversation_created
    )`
}

/** `conversation_moved`: the existing conversation (`conversation_current`) opened again. */
const arrivalMoves = (sql: SqlClient.SqlClient, input: { readonly now: string; readonly inbound: boolean }) => {
  const { inbound, now } = input
  return sql`conversation_moved AS (
      UPDATE conversations c SET status = 'open', updated_at = ${now},
        last_message_at = GREATEST(c.last_message_at, ${now}),
        last_inbound_at = CASE WHEN ${inbound} THEN GREATEST(c.last_inbound_at, ${now}) ELSE c.last_inbound_at END
      FROM conversation_current cur WHERE c.id = cur.id
      RETURNING c.id, cur.status AS prior
    )`
}
