/**
 * Conversations: one per (channel, contact) for good (a unique key), opened by the first message
 * and reopened by any later one; the inbox reads (list, find with the contact inline and the
 * unread count), updates and the read marker. Which events follow which change is the domain's
 * `ConversationStateMachine`.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { ArrivalEvents, Conversations, ConversationStateMachine, Ids, type Pagination } from "@switchboard/domain"
import { Clock, Effect, Option, Schema } from "effect"
import { EventsRepo } from "./EventsRepo.js"
import { CLOCK_SLACK_MS, idBound, recentFrom } from "./Partitions.js"
import { dieOnDatabaseError, iso, isoOrNull, TimestampColumn } from "./Rows.js"
import { columnsOfMessage, MessageColumns, messageOfColumns } from "./rows/MessageRows.js"
import { conversationArrivalCtes } from "./statements/ConversationArrival.js"

/** The columns of a `conversations` row with its contact's (`view` below) and its unread count. */
const ConversationColumns = Schema.Struct({
  id: Ids.Id("cnv"),
  workspace_id: Ids.Id("ws"),
  channel_id: Ids.Id("ch"),
  contact_id: Schema.NullOr(Ids.Id("cnt")),
  group_chat_id: Schema.NullOr(Ids.Id("gch")),
  contact_found: Schema.Boolean,
  contact_phone_number: Schema.NullOr(Schema.String),
  contact_whatsapp_lid: Schema.NullOr(Schema.String),
  contact_name: Schema.NullOr(Schema.String),
  status: ConversationStateMachine.ConversationStatus,
  assignee_id: Schema.NullOr(Ids.Id("usr")),
  last_message_at: Schema.NullOr(TimestampColumn),
  /** the thread's newest `messages` row as one JSON value (`lastMessage` below) */
  last_message: Schema.NullOr(MessageColumns),
  last_inbound_at: Schema.NullOr(TimestampColumn),
  last_read_at: Schema.NullOr(TimestampColumn),
  unread_count: Schema.Number,
  created_at: TimestampColumn,
  updated_at: TimestampColumn
})

/**
 * A row of `conversations` with its contact's columns and its unread count, decoded to the
 * domain's `Conversation`: the one shape of the resource (docs/ARCHITECTURE.md "Adding a
 * resource"). The ids are checked and typed (`cnv_...`, `ws_...`, `ch_...`, `cnt_...`, `usr_...`)
 * while decoding, the contact's columns become `contact` (null once the contact was deleted: the
 * conversation keeps its `contact_id`, history stays), the timestamps the wire's ISO strings; no
 * mapper, no cast.
 */
export const ConversationRow = Schema.transform(ConversationColumns, Conversations.Conversation, {
  strict: true,
  decode: ({ contact_found, contact_name, contact_phone_number, contact_whatsapp_lid, group_chat_id, ...row }) => ({
    ...row,
    object: "conversation" as const,
    ...(group_chat_id === null ? {} : { group_chat_id }),
    contact: !contact_found || row.contact_id === null ? null : {
      id: row.contact_id,
      object: "contact" as const,
      phone_number: contact_phone_number,
      whatsapp_lid: contact_whatsapp_lid,
      name: contact_name
    },
    last_message_at: isoOrNull(row.last_message_at),
    last_message: row.last_message === null ? null : messageOfColumns(row.last_message),
    last_inbound_at: isoOrNull(row.last_inbound_at),
    last_read_at: isoOrNull(row.last_read_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  }),
  encode: ({ contact, group_chat_id, last_message, object: _, ...conversation }) => ({
    ...conversation,
    group_chat_id: group_chat_id ?? null,
    last_message: last_message === null ? null : columnsOfMessage(last_message),
    contact_found: contact !== null,
    contact_phone_number: contact?.phone_number ?? null,
    contact_whatsapp_lid: contact?.whatsapp_lid ?? null,
    contact_name: contact?.name ?? null
  })
})

/** An updated row: the conversation after (`ConversationRow`) and what it was before. */
const UpdatedRow = Schema.transform(
  Schema.Struct({
    ...ConversationColumns.fields,
    prior_status: ConversationStateMachine.ConversationStatus,
    prior_assignee_id: Schema.NullOr(Ids.Id("usr")),
    prior_last_read_at: Schema.NullOr(TimestampColumn)
  }),
  Schema.Struct({
    before: Schema.Struct({
      status: ConversationStateMachine.ConversationStatus,
      assigneeId: Schema.NullOr(Ids.Id("usr")),
      lastReadAt: Schema.NullOr(Schema.String)
    }),
    after: ConversationRow
  }),
  {
    strict: true,
    decode: ({ prior_assignee_id, prior_last_read_at, prior_status, ...row }) => ({
      before: { status: prior_status, assigneeId: prior_assignee_id, lastReadAt: isoOrNull(prior_last_read_at) },
      after: row
    }),
    encode: ({ after, before }) => ({
      ...after,
      prior_status: before.status,
      prior_assignee_id: before.assigneeId,
      prior_last_read_at: before.lastReadAt
    })
  }
)

/** What `upsertConversation` reads back, and the ids its event names (checked and typed). */
const ArrivedRow = Schema.Struct({
  id: Ids.Id("cnv"),
  prior: Schema.NullOr(ConversationStateMachine.ConversationStatus),
  channel_id: Ids.Id("ch"),
  contact_id: Schema.NullOr(Ids.Id("cnt")),
  group_chat_id: Schema.NullOr(Ids.Id("gch"))
})
const decodeArrived = Schema.decodeUnknown(ArrivedRow)

export interface ConversationFilters {
  readonly status?: ConversationStateMachine.ConversationStatus | undefined
  readonly channelId?: string | undefined
  readonly contactId?: string | undefined
  /** a user id, or `null` for unassigned ones */
  readonly assigneeId?: string | null | undefined
}

export interface ConversationUpdate {
  readonly status?: ConversationStateMachine.ConversationStatus | undefined
  /** `undefined` keeps the assignee, `null` removes it */
  readonly assigneeId?: string | null | undefined
  /** moves the read marker forward to the newest inbound message (`last_inbound_at`) */
  readonly markRead?: boolean | undefined
  /** with `markRead`: only up to this time (a message's `created_at`) instead of the newest inbound message */
  readonly readUpTo?: string | undefined
}

export class ConversationsRepo extends Effect.Service<ConversationsRepo>()("@switchboard/db/ConversationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo

    // The thread of row `c` read at `now` (epoch ms): its newest message and its inbound messages
    // after the read marker, from the recent months alone when they settle it (`Partitions.RECENT_MS`:
    // no older month holds a message after `settled`), from every month otherwise (each subquery of
    // a COALESCE or CASE runs only when reached)
    const thread = (now: number) => {
      const from = recentFrom(now)
      const recent = sql`m.id >= ${idBound(sql, Ids.idFloor("msg", from))}`
      const settled = new Date(from + CLOCK_SLACK_MS).toISOString()
      const newest = (where: Statement.Fragment) =>
        sql`(SELECT to_jsonb(m) FROM messages m WHERE m.conversation_id = c.id ${where}
          ORDER BY m.created_at DESC, m.id DESC LIMIT 1)`
      const unread = (where: Statement.Fragment) =>
        sql`(SELECT count(*)::int FROM messages m WHERE m.conversation_id = c.id AND m.direction = 'inbound'
          AND (c.last_read_at IS NULL OR m.created_at > c.last_read_at) ${where})`
      // the newest message as one JSON value (its timestamps as strings: `TimestampColumn`), one
      // step down `messages_conversation_created` of each month read
      return sql`CASE WHEN c.last_read_at >= ${settled}::timestamptz THEN ${unread(sql`AND ${recent}`)}
          ELSE ${unread(sql``)} END AS unread_count,
        COALESCE(${newest(sql`AND ${recent} AND m.created_at >= ${settled}::timestamptz`)}, ${newest(sql``)})
          AS last_message`
    }
    // the inbox's view of rows `c` (the contact joined, inbound messages after the read marker counted)
    const view = (now: number) =>
      sql`c.*, k.id IS NOT NULL AS contact_found, k.phone_number AS contact_phone_number,
      k.whatsapp_lid AS contact_whatsapp_lid, k.name AS contact_name, ${thread(now)}`

    /** The conversation of (channel, contact or group chat) for a message (`upsertConversation`). */
    const arrive = (
      workspaceId: string,
      channelId: string,
      party: { readonly contactId: string } | { readonly groupChatId: string },
      now: string,
      direction: "outbound" | "inbound"
    ) =>
      Effect.gen(function*() {
        const id = yield* Ids.newId("cnv")
        const inbound = direction === "inbound"
        const contactId = "contactId" in party ? party.contactId : null
        const groupChatId = "groupChatId" in party ? party.groupChatId : null
        const upsert = sql`WITH ${
          conversationArrivalCtes(sql, {
            id,
            workspaceId,
            channelId,
            contact: sql`(SELECT ${contactId}::text AS id) k`,
            groupChatId: groupChatId ?? undefined,
            now,
            inbound
          })
        } SELECT id, prior FROM conversation`
        // empty only when a concurrent first message inserted the row: the next statement sees it
        let rows = yield* upsert
        if (!rows[0]) rows = yield* upsert
        const row = yield* decodeArrived({
          ...rows[0],
          channel_id: channelId,
          contact_id: contactId,
          group_chat_id: groupChatId
        })
        const event = ArrivalEvents.arrivalEvent(row.id === id ? null : row.prior ?? "open", direction, {
          id: row.id,
          channelId: row.channel_id,
          contactId: row.contact_id,
          ...(row.group_chat_id === null ? {} : { groupChatId: row.group_chat_id })
        })
        if (event !== undefined) yield* events.append({ workspaceId, event, occurredAt: now })
        return row.id
      })

    /**
     * The conversation of (channel, contact) for a message: created when missing, reopened when
     * closed (the same row), in one statement whose row lock orders it against a concurrent close.
     * Appends `conversation.created` or `conversation.reopened` (with the message's direction as
     * reason) in the caller's transaction.
     */
    const upsertConversation = Effect.fn("ConversationsRepo.upsertConversation")(
      function*(
        workspaceId: string,
        channelId: string,
        contactId: string,
        now: string,
        direction: "outbound" | "inbound" = "outbound"
      ) {
        return yield* arrive(workspaceId, channelId, { contactId }, now, direction)
      },
      dieOnDatabaseError
    )

    /**
     * The conversation of a group chat on its channel (docs/API.md "Group chats"; `contact_id`
     * null) for a message, as `upsertConversation` does for a contact's.
     */
    const upsertGroupConversation = Effect.fn("ConversationsRepo.upsertGroupConversation")(
      function*(
        workspaceId: string,
        channelId: string,
        groupChatId: string,
        now: string,
        direction: "outbound" | "inbound"
      ) {
        return yield* arrive(workspaceId, channelId, { groupChatId }, now, direction)
      },
      dieOnDatabaseError
    )

    const findOne = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, id: Schema.String, now: Schema.Number }),
      Result: ConversationRow,
      execute: ({ id, now, workspaceId }) =>
        sql`SELECT ${view(now)} FROM conversations c LEFT JOIN contacts k ON k.id = c.contact_id
          WHERE c.workspace_id = ${workspaceId} AND c.id = ${id}`
    })
    const find = Effect.fn("ConversationsRepo.find")(function*(workspaceId: string, id: string) {
      return yield* findOne({ workspaceId, id, now: yield* Clock.currentTimeMillis })
    }, dieOnDatabaseError)

    const list = Effect.fn("ConversationsRepo.list")(function*(
      workspaceId: string,
      filters: ConversationFilters,
      limit: number,
      after: Pagination.CursorPosition | undefined
    ) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* SqlSchema.findAll({
        Request: Schema.Void,
        Result: ConversationRow,
        execute: () =>
          sql`SELECT ${view(now)} FROM conversations c LEFT JOIN contacts k ON k.id = c.contact_id
          WHERE c.workspace_id = ${workspaceId}
          ${filters.status ? sql`AND c.status = ${filters.status}` : sql``}
          ${filters.channelId ? sql`AND c.channel_id = ${filters.channelId}` : sql``}
          ${filters.contactId ? sql`AND c.contact_id = ${filters.contactId}` : sql``}
          ${
            filters.assigneeId === null
              ? sql`AND c.assignee_id IS NULL`
              : filters.assigneeId
              ? sql`AND c.assignee_id = ${filters.assigneeId}`
              : sql``
          }
          ${after ? sql`AND (c.created_at, c.id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
          ORDER BY c.created_at DESC, c.id DESC LIMIT ${limit + 1}`
      })(undefined)
      return rows
    }, dieOnDatabaseError)

    const updateOne = SqlSchema.findOne({
      Request: Schema.Struct({
        workspaceId: Schema.String,
        id: Schema.String,
        status: Schema.NullOr(ConversationStateMachine.ConversationStatus),
        setAssignee: Schema.Boolean,
        assigneeId: Schema.NullOr(Schema.String),
        markRead: Schema.Boolean,
        readUpTo: Schema.NullOr(Schema.String),
        now: Schema.String
      }),
      Result: UpdatedRow,
      execute: (u) =>
        sql`WITH current AS (
            SELECT id, status, assignee_id, last_read_at, last_inbound_at FROM conversations
            WHERE workspace_id = ${u.workspaceId} AND id = ${u.id} FOR UPDATE
          ), next AS (
            SELECT id, status AS prior_status, assignee_id AS prior_assignee_id, last_read_at AS prior_last_read_at,
              COALESCE(${u.status}::text, status) AS status,
              CASE WHEN ${u.setAssignee} THEN ${u.assigneeId}::text ELSE assignee_id END AS assignee_id,
              CASE WHEN ${u.markRead}
                THEN GREATEST(last_read_at, COALESCE(${u.readUpTo}::timestamptz, last_inbound_at)) ELSE last_read_at END
                AS last_read_at
            FROM current
          ), moved AS (
            UPDATE conversations c SET status = next.status, assignee_id = next.assignee_id,
              last_read_at = next.last_read_at,
              updated_at = CASE WHEN (next.status, next.assignee_id, next.last_read_at)
                IS DISTINCT FROM (next.prior_status, next.prior_assignee_id, next.prior_last_read_at)
                THEN ${u.now}::timestamptz ELSE c.updated_at END
            FROM next WHERE c.id = next.id
            RETURNING c.*, next.prior_status, next.prior_assignee_id, next.prior_last_read_at
          )
          SELECT ${view(Date.parse(u.now))} FROM moved c LEFT JOIN contacts k ON k.id = c.contact_id`
    })

    /**
     * Applies `update` under the row's lock (one statement); the conversation before and after,
     * or `None` when the workspace has no such conversation. Changes nothing it is not asked to.
     */
    const update = Effect.fn("ConversationsRepo.update")(
      function*(workspaceId: string, id: string, update: ConversationUpdate, now: string) {
        return yield* updateOne({
          workspaceId,
          id,
          status: update.status ?? null,
          setAssignee: update.assigneeId !== undefined,
          assigneeId: update.assigneeId ?? null,
          markRead: update.markRead ?? false,
          readUpTo: update.readUpTo ?? null,
          now
        })
      },
      dieOnDatabaseError
    )

    return { upsertConversation, upsertGroupConversation, find, list, update } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
