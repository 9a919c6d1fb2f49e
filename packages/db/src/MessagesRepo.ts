/**
 * Messages and their timeline: the reads (`find` with its timeline, `list`, by provider id), the
 * inbound writes (`insert`, `completeAwaiting`, `markInboundRead`, `mediaSettled`), and the guarded
 * status moves of `statements/MessageTransitions.ts`. Rows decode with `rows/MessageRows.ts`
 * straight into the domain's `Message`. What the dispatchers and sweepers read of the queue is
 * `DispatchQueueRepo`; the send's writes are `SendWritesRepo`.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  Events,
  Ids,
  MessageCategory,
  MessageContent,
  MessageStateMachine,
  Messaging,
  type Pagination
} from "@switchboard/domain"
import { Clock, Effect, Option, Schema } from "effect"
import { EventsRepo } from "./EventsRepo.js"
import { CLOCK_SLACK_MS, idBound, idsFrom, recentFrom } from "./Partitions.js"
import { dieOnDatabaseError } from "./Rows.js"
import { decodeClaimedIds, decodeMessages, TransitionRow } from "./rows/MessageRows.js"
import { inboundRead, type InboundReadInput } from "./statements/InboundRead.js"
import { makeMessageTransitions } from "./statements/MessageTransitions.js"

export {
  columnsOfMessage,
  MessageColumns,
  messageOfColumns,
  MessageRow,
  type Transitioned
} from "./rows/MessageRows.js"
export type { ReceiptTrackStatus, TransitionOptions } from "./statements/MessageTransitions.js"

export interface MessageFilters {
  readonly status?: MessageStateMachine.MessageStatus | undefined
  readonly direction?: "outbound" | "inbound" | undefined
  readonly category?: MessageCategory.Category | undefined
  readonly channelId?: string | undefined
  readonly conversationId?: string | undefined
  /**
   * only messages whose id lies in `[lower, upper)` (`Partitions.idWindow`: made in a window of
   * time): the statement reads only the partitions of that window (retention)
   */
  readonly ids?: { readonly lower: string; readonly upper: string } | undefined
}

export class MessagesRepo extends Effect.Service<MessagesRepo>()("@switchboard/db/MessagesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo
    const { receipts, takeForDispatch, transition } = makeMessageTransitions(sql, events)

    const insert = Effect.fn("MessagesRepo.insert")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly channelId: string
      readonly conversationId: string
      readonly contactId: string
      readonly direction: "outbound" | "inbound"
      readonly from: string | null
      readonly to: string
      readonly body: string
      readonly category: MessageCategory.Category
      readonly priority: number
      readonly status: MessageStateMachine.MessageStatus
      readonly metadata: Record<string, string>
      readonly now: string
      /** inbound only: the provider's id of the message */
      readonly providerMessageId?: string | undefined
      /** a template send: the template and the values `body` was rendered with */
      readonly template?: { readonly id: string; readonly slug: string; readonly variables: Record<string, string> }
      /** inbound of another kind than text: its type and member (docs/API.md "Messages") */
      readonly type?: MessageContent.MessageType | undefined
      readonly content?: Messaging.MessageMemberValue | undefined
      readonly replyTo?: string | null | undefined
      readonly senderLid?: string | null | undefined
      readonly mediaId?: string | null | undefined
      /** a message in a group chat (docs/API.md "Group chats") */
      readonly groupChatId?: string | null | undefined
      /** an inbound group message: the contacts of the participants it mentions */
      readonly mentions?: ReadonlyArray<string> | undefined
    }) {
      const type = input.type ?? (input.template ? "template" : "text")
      // an inbound message's time is WhatsApp's (earlier than its id's, or later if the clocks
      // differ): at most a day after its id's, which newest-first reads rely on (`list`)
      const made = Ids.idTime(input.id)
      const now = made !== undefined && Date.parse(input.now) > made + CLOCK_SLACK_MS
        ? new Date(made + CLOCK_SLACK_MS).toISOString()
        : input.now
      const delivered = input.status === "delivered" ? now : null
      // the message and the first row of its timeline in one round trip; an inbound message's
      // provider id claimed in `message_provider_ids` by the same statement (taken: the channel
      // recorded that message already, in any month; unique violation)
      const claim = input.providerMessageId === undefined
        ? sql``
        : sql`claimed AS (
            INSERT INTO message_provider_ids (channel_id, provider_message_id, message_id)
            VALUES (${input.channelId}, ${input.providerMessageId}, ${input.id})
          ), `
      const rows = yield* sql`WITH ${claim}inserted AS (
          INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction,
            from_number, to_number, type, body, template, category, priority, status, metadata, created_at, updated_at,
            delivered_at, provider_message_id, content, reply_to, sender_lid, media_id, media_status, group_chat_id,
            mentions)
          VALUES (${input.id}, ${input.workspaceId}, ${input.channelId}, ${input.conversationId}, ${input.contactId},
            ${input.direction}, ${input.from}, ${input.to}, ${type}, ${input.body},
            ${input.template ? JSON.stringify(input.template) : null}::jsonb, ${input.category}, ${input.priority},
            ${input.status}, ${JSON.stringify(input.metadata)}::jsonb, ${now}, ${now}, ${delivered},
            ${input.providerMessageId ?? null},
            ${input.content === undefined ? null : JSON.stringify(input.content)}::jsonb, ${input.replyTo ?? null},
            ${input.senderLid ?? null}, ${input.mediaId ?? null}, ${input.mediaId ? "pending" : null},
            ${input.groupChatId ?? null},
            ${
        input.mentions === undefined || input.mentions.length === 0 ? null : JSON.stringify(input.mentions)
      }::jsonb)
          RETURNING *
        ), timeline AS (
          INSERT INTO message_transitions (message_id, from_state, to_state, at)
          SELECT id, NULL, status, created_at FROM inserted
        )
        SELECT * FROM inserted`
      return (yield* decodeMessages(rows))[0]!
    }, dieOnDatabaseError)

    /** `message.queued` for a message just inserted as queued (same transaction). */
    const appendQueuedEvent = Effect.fn("MessagesRepo.appendQueuedEvent")(function*(message: Messaging.Message) {
      yield* events.append({
        workspaceId: message.workspace_id,
        event: Events.queuedEvent(message),
        occurredAt: message.created_at
      })
    }, dieOnDatabaseError)

    const timelineOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: TransitionRow,
      execute: (id) =>
        sql`SELECT from_state, to_state, at, reason FROM message_transitions WHERE message_id = ${id} ORDER BY id`
    })

    /**
     * The business read the conversation's inbound messages up to `upTo` (a `created_at`): those
     * not marked yet get `read_at`; answers them (the provider's ids, to send the read receipts),
     * none when they all were (a repeated call sends nothing twice). From the conversation's first
     * unread message's month on (`statements/InboundRead.ts`); in the read marker's transaction.
     */
    const markInboundRead = Effect.fn("MessagesRepo.markInboundRead")(function*(input: InboundReadInput) {
      return yield* inboundRead(sql, input)
    }, dieOnDatabaseError)

    const find = Effect.fn("MessagesRepo.find")(function*(workspaceId: string, id: string) {
      const rows = yield* decodeMessages(
        yield* sql`SELECT * FROM messages WHERE workspace_id = ${workspaceId} AND id = ${id}`
      )
      if (!rows[0]) return Option.none<Messaging.MessageWithTimeline>()
      return Option.some(new Messaging.MessageWithTimeline({ ...rows[0], timeline: yield* timelineOf(id) }))
    }, dieOnDatabaseError)

    /** Any workspace, for entities. */
    const findById = Effect.fn("MessagesRepo.findById")(function*(id: string) {
      const rows = yield* decodeMessages(yield* sql`SELECT * FROM messages WHERE id = ${id}`)
      return Option.fromNullable(rows[0])
    }, dieOnDatabaseError)

    /** A page of `list` among the ids in `[lower, upper)` (`undefined`: no bound on that side). */
    const page = (
      workspaceId: string,
      filters: MessageFilters,
      ids: { readonly lower: string | undefined; readonly upper: string | undefined },
      limit: number,
      after: Pagination.CursorPosition | undefined
    ) =>
      Effect.flatMap(
        sql`SELECT * FROM messages WHERE workspace_id = ${workspaceId}
        ${ids.lower === undefined ? sql`` : sql`AND id >= ${idBound(sql, ids.lower)}`}
        ${ids.upper === undefined ? sql`` : sql`AND id < ${idBound(sql, ids.upper)}`}
        ${filters.status ? sql`AND status = ${filters.status}` : sql``}
        ${filters.direction ? sql`AND direction = ${filters.direction}` : sql``}
        ${filters.category ? sql`AND category = ${filters.category}` : sql``}
        ${filters.channelId ? sql`AND channel_id = ${filters.channelId}` : sql``}
        ${filters.conversationId ? sql`AND conversation_id = ${filters.conversationId}` : sql``}
        ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`,
        decodeMessages
      )

    /**
     * A page of the workspace's messages, newest first (`created_at`, then id), `limit` and one
     * more (has more?). A page is read from every month it may take rows from (a Merge Append takes
     * a step down each month's index), so it is tried first on the recent months before its start
     * (its cursor, or now: `Partitions.RECENT_MS`), which settle it when the try's last row is
     * newer than `recentFrom` plus a day; otherwise it is read again from every month (or the
     * retention window's). The try has no upper bound of its own (the months ahead are empty: a
     * step down each one's index), so a test's clock set back hides no row.
     */
    const list = Effect.fn("MessagesRepo.list")(function*(
      workspaceId: string,
      filters: MessageFilters,
      limit: number,
      after: Pagination.CursorPosition | undefined
    ) {
      const now = yield* Clock.currentTimeMillis
      const from = recentFrom(after === undefined ? now : Date.parse(after.created_at))
      const recent = Ids.idFloor("msg", from)
      if (filters.ids === undefined || filters.ids.lower < recent) {
        const rows = yield* page(workspaceId, filters, { lower: recent, upper: filters.ids?.upper }, limit, after)
        const last = rows[limit]
        if (last !== undefined && Date.parse(last.created_at) >= from + CLOCK_SLACK_MS) return rows
      }
      return yield* page(workspaceId, filters, { lower: filters.ids?.lower, upper: filters.ids?.upper }, limit, after)
    }, dieOnDatabaseError)

    /** Whether the channel recorded this provider's message already (an inbound message heard twice). */
    const hasProviderMessage = Effect.fn("MessagesRepo.hasProviderMessage")(
      function*(channelId: string, providerMessageId: string) {
        const seen = yield* sql`SELECT 1 FROM message_provider_ids
        WHERE channel_id = ${channelId} AND provider_message_id = ${providerMessageId}`
        return seen.length > 0
      },
      dieOnDatabaseError
    )

    /**
     * An inbound message recorded before its content reached the device (`unsupported` of one of
     * `MessageContent.AWAITING_CONTENT_KINDS`) takes the content now heard under its provider id,
     * in place: one statement that checks and writes. `None` when there is no such message (the
     * message was complete already: a repeated report).
     */
    const completeAwaiting = Effect.fn("MessagesRepo.completeAwaiting")(function*(input: {
      readonly channelId: string
      readonly providerMessageId: string
      readonly type: MessageContent.MessageType
      readonly body: string
      readonly content: Messaging.MessageMemberValue | undefined
      readonly replyTo: string | null
      readonly mediaId: string | null
      readonly now: string
    }) {
      // the message by its id (one partition), found through its provider id
      const [claimed] = yield* decodeClaimedIds(
        yield* sql`SELECT message_id FROM message_provider_ids
        WHERE channel_id = ${input.channelId} AND provider_message_id = ${input.providerMessageId}`
      )
      if (claimed === undefined) return Option.none<Messaging.Message>()
      const rows = yield* sql`UPDATE messages SET type = ${input.type}, body = ${input.body},
          content = ${input.content === undefined ? null : JSON.stringify(input.content)}::jsonb,
          reply_to = ${input.replyTo}, media_id = ${input.mediaId},
          media_status = ${input.mediaId === null ? null : "pending"}, updated_at = ${input.now}
        WHERE id = ${claimed.message_id} AND channel_id = ${input.channelId}
          AND direction = 'inbound' AND type = 'unsupported'
          AND content->>'kind' IN ${sql.in(MessageContent.AWAITING_CONTENT_KINDS)}
        RETURNING *`
      return Option.fromNullable((yield* decodeMessages(rows))[0])
    }, dieOnDatabaseError)

    /**
     * Our id of a message of the channel the provider knows by `providerMessageId`: an inbound one
     * (its provider id) or one of ours (our id is the provider's id: `ChannelProvider.send`).
     */
    const idForProviderMessage = Effect.fn("MessagesRepo.idForProviderMessage")(
      function*(channelId: string, providerMessageId: string) {
        const row = yield* SqlSchema.findOne({
          Request: Schema.Void,
          Result: Schema.Struct({ id: Ids.Id("msg") }),
          execute: () =>
            // ours by its id (one partition), or an inbound one through its claimed provider id
            // (while its message is kept: none once retention dropped it)
            sql`SELECT id FROM messages WHERE channel_id = ${channelId} AND id = ${providerMessageId}
              UNION ALL
              SELECT p.message_id FROM message_provider_ids p
              WHERE p.channel_id = ${channelId} AND p.provider_message_id = ${providerMessageId}
                AND EXISTS (SELECT 1 FROM messages m WHERE m.id = p.message_id)
              LIMIT 1`
        })(undefined)
        return Option.isSome(row) ? row.value.id : null
      },
      dieOnDatabaseError
    )

    /**
     * A file reached its end (`ready` with size and hash, or `failed`; `expired` past retention):
     * the messages that carry it show it (their member's `size_bytes`/`sha256`, `media.status`).
     * Answers them. Those messages are the one the file came with (`messageId`, the media row's
     * `message_id`: an inbound message, older than the file when its content arrived late) and the
     * sends of it, made after the file was (its id's time; a day of clock slack,
     * `Partitions.idsFrom`), so the statement reads that message's month and the months since the
     * file, not every month.
     */
    const mediaSettled = Effect.fn("MessagesRepo.mediaSettled")(function*(input: {
      readonly mediaId: string
      /** the message the file came with (the media row's `message_id`); null for an upload */
      readonly messageId: string | null
      readonly status: "ready" | "failed" | "expired"
      readonly failure: string | null
      readonly sizeBytes: number | null
      readonly sha256: string | null
      readonly now: string
    }) {
      const made = Ids.idTime(input.mediaId)
      const sends = made === undefined ? sql`true` : idsFrom(sql, "msg", "id", made)
      const rows = yield* sql`UPDATE messages SET media_status = ${input.status},
          media_failure = ${input.failure}, updated_at = ${input.now},
          content = CASE WHEN ${input.sizeBytes !== null} THEN content
            || jsonb_build_object('size_bytes', ${input.sizeBytes}::bigint, 'sha256', ${input.sha256}::text)
            ELSE content END
        WHERE media_id = ${input.mediaId}
          AND ${input.messageId === null ? sends : sql`(id = ${input.messageId} OR ${sends})`}
        RETURNING *`
      return yield* decodeMessages(rows)
    }, dieOnDatabaseError)

    return {
      insert,
      completeAwaiting,
      idForProviderMessage,
      mediaSettled,
      appendQueuedEvent,
      transition,
      takeForDispatch,
      receipts,
      find,
      markInboundRead,
      findById,
      list,
      hasProviderMessage
    } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
