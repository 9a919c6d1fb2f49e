/**
 * The row schemas of `messages` and `message_transitions`: a `messages` row decoded straight into
 * the domain's `Message` (`MessageRow`), a timeline row into its `TimelineEntry`, and what a move
 * reads back of the row it moved (`Transitioned`).
 */
import { Ids, Media, MessageCategory, MessageContent, MessageStateMachine, Messaging } from "@switchboard/domain"
import { Schema } from "effect"
import { decodeRows, iso, isoOrNull, NumberColumn, TimestampColumn } from "../Rows.js"

/** The columns of a `messages` row. */
export const MessageColumns = Schema.Struct({
  id: Ids.Id("msg"),
  workspace_id: Ids.Id("ws"),
  channel_id: Ids.Id("ch"),
  conversation_id: Ids.Id("cnv"),
  contact_id: Schema.NullOr(Ids.Id("cnt")),
  direction: Messaging.Direction,
  from_number: Schema.NullOr(Schema.String),
  to_number: Schema.String,
  type: MessageContent.MessageType,
  body: Schema.String,
  template: Schema.NullOr(
    Schema.Struct({
      id: Ids.Id("tpl"),
      slug: Schema.String,
      variables: Schema.Record({ key: Schema.String, value: Schema.String })
    })
  ),
  category: MessageCategory.Category,
  status: MessageStateMachine.MessageStatus,
  failure: Schema.NullOr(Messaging.Failure),
  metadata: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })),
  created_at: TimestampColumn,
  updated_at: TimestampColumn,
  sent_at: Schema.NullOr(TimestampColumn),
  delivered_at: Schema.NullOr(TimestampColumn),
  read_at: Schema.NullOr(TimestampColumn),
  /** the member of a non-text type, as the wire shows it (the `Message` class checks it) */
  content: Schema.NullOr(Schema.Unknown),
  reply_to: Schema.NullOr(Ids.Id("msg")),
  sender_lid: Schema.NullOr(Schema.String),
  media_id: Schema.NullOr(Ids.Id("med")),
  media_status: Schema.NullOr(Media.MediaStatus),
  media_failure: Schema.NullOr(Schema.String),
  /** a message in a group chat (migration 0170) */
  group_chat_id: Schema.NullOr(Ids.Id("gch")),
  /** an inbound group message's mentioned participants (contact ids) */
  mentions: Schema.NullOr(Schema.Array(Ids.Id("cnt")))
})

/**
 * A row of `messages` decoded to the domain's `Message`: the one shape of the resource
 * (docs/ARCHITECTURE.md "Adding a resource"). The ids are checked and typed (`msg_...`, `ws_...`,
 * `ch_...`, `cnv_...`, `cnt_...`, `tpl_...`, `med_...`) while decoding, the timestamps become the
 * wire's ISO strings; no mapper, no cast. Reads and inbound writes only: the send path writes
 * through `SendWritesRepo` and the dispatch path reads back `Transitioned`, never a `Message`.
 */
export const MessageRow = Schema.transform(MessageColumns, Messaging.Message, {
  strict: true,
  decode: (r) => messageOfColumns(r),
  encode: (m) => columnsOfMessage(m)
})

/** A `messages` row's columns (decoded) as the wire's message (encoded): `MessageRow`'s decode. */
export const messageOfColumns = (
  r: typeof MessageColumns.Type
): typeof Messaging.Message.Encoded => ({
  id: r.id,
  object: "message" as const,
  workspace_id: r.workspace_id,
  channel_id: r.channel_id,
  conversation_id: r.conversation_id,
  contact_id: r.contact_id,
  ...(r.group_chat_id === null ? {} : { group_chat_id: r.group_chat_id }),
  ...(r.mentions === null || r.mentions.length === 0 ? {} : { mentions: r.mentions }),
  direction: r.direction,
  from: r.from_number,
  to: r.to_number,
  type: r.type,
  text: { body: r.body },
  ...(r.type !== "text" && r.type !== "template" && r.content !== null && r.content !== undefined
    ? { [r.type]: r.content }
    : {}),
  context: { reply_to: r.reply_to },
  sender: r.direction === "inbound" ? { phone_number: r.from_number, whatsapp_lid: r.sender_lid } : null,
  media: r.media_id
    ? { id: r.media_id, status: r.media_status ?? "pending" as const, failure_reason: r.media_failure }
    : null,
  template: r.template,
  category: r.category,
  status: r.status,
  failure: r.failure,
  metadata: r.metadata ?? {},
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  sent_at: isoOrNull(r.sent_at),
  delivered_at: isoOrNull(r.delivered_at),
  read_at: isoOrNull(r.read_at)
})

/** The wire's message as a `messages` row's columns: `MessageRow`'s encode. */
export const columnsOfMessage = (m: typeof Messaging.Message.Encoded): typeof MessageColumns.Type => ({
  id: m.id,
  workspace_id: m.workspace_id,
  channel_id: m.channel_id,
  conversation_id: m.conversation_id,
  contact_id: m.contact_id,
  direction: m.direction,
  from_number: m.from,
  to_number: m.to,
  type: m.type,
  body: m.text.body,
  template: m.template,
  category: m.category,
  status: m.status,
  failure: m.failure,
  metadata: m.metadata,
  created_at: m.created_at,
  updated_at: m.updated_at,
  sent_at: m.sent_at,
  delivered_at: m.delivered_at,
  read_at: m.read_at,
  content: m.type === "text" || m.type === "template" ? null : m[m.type] ?? null,
  reply_to: m.context.reply_to,
  sender_lid: m.sender?.whatsapp_lid ?? null,
  media_id: m.media?.id ?? null,
  media_status: m.media?.status ?? null,
  media_failure: m.media?.failure_reason ?? null,
  group_chat_id: m.group_chat_id ?? null,
  mentions: m.mentions ?? null
})
/** Decodes `messages` rows (`SELECT *` or `RETURNING *`) to `Message`s. */
export const decodeMessages = Schema.decodeUnknown(Schema.Array(MessageRow))

/** A row of `message_transitions` decoded to the domain's `TimelineEntry` (its time as the wire's ISO string). */
export const TransitionRow = Schema.transform(
  Schema.Struct({
    from_state: Schema.NullOr(MessageStateMachine.MessageStatus),
    to_state: MessageStateMachine.MessageStatus,
    at: TimestampColumn,
    reason: Schema.NullOr(Schema.String)
  }),
  Messaging.TimelineEntry,
  { strict: true, decode: (t) => ({ ...t, at: iso(t.at) }), encode: (t) => t }
)

/**
 * A transition that happened: what its callers use of the moved row (not a whole `Message`: the
 * dispatch path makes one per move, and building and checking a `Message` from our own row showed
 * in its profile).
 */
export interface Transitioned {
  readonly id: string
  /** the status it moved to */
  readonly status: MessageStateMachine.MessageStatus
  readonly from: MessageStateMachine.MessageStatus
  /** failed dispatch attempts so far */
  readonly attempts: number
  /** the provider of the message's channel (metrics label transitions with it) */
  readonly provider: string
}

/**
 * The columns of a moved row that every move reads back (`Transitioned`'s): decoded on the
 * dispatch and receipt paths, so only these five.
 */
export const MovedColumns = Schema.Struct({
  id: Schema.String,
  status: MessageStateMachine.MessageStatus,
  from_state: MessageStateMachine.MessageStatus,
  attempts: NumberColumn,
  provider: Schema.NullOr(Schema.String)
})

/** What `transition` reads back besides: the message's workspace and what its status event says. */
export const MovedRow = Schema.Struct({
  ...MovedColumns.fields,
  workspace_id: Schema.String,
  category: MessageCategory.Category,
  failure: Schema.NullOr(Messaging.Failure)
})

/** `transition`'s row, and the rows of `receipts` and `takeForDispatch` (the five columns only). */
export const decodeMoved = decodeRows(MovedRow)
export const decodeMovedColumns = decodeRows(MovedColumns)

export const toTransitioned = (row: typeof MovedColumns.Type): Transitioned => ({
  id: row.id,
  status: row.status,
  from: row.from_state,
  attempts: row.attempts,
  provider: row.provider ?? "unknown"
})

/** The message a provider id is recorded for (`message_provider_ids`). */
export const decodeClaimedIds = decodeRows(Schema.Struct({ message_id: Schema.String }))

/** A conversation's `unread_from_id` (migration 0192): where `markInboundRead` starts. */
export const decodeUnreadFrom = decodeRows(Schema.Struct({ unread_from_id: Schema.NullOr(Schema.String) }))

/** What `markInboundRead` answers of each message it marked: where its read receipt goes. */
export const decodeMarkedRead = decodeRows(Schema.Struct({
  id: Ids.Id("msg"),
  provider_message_id: Schema.NullOr(Schema.String),
  from_number: Schema.NullOr(Schema.String),
  sender_lid: Schema.NullOr(Schema.String),
  /** a group chat's message: WhatsApp's id of the group (its receipt goes to the group chat) */
  whatsapp_group_id: Schema.NullOr(Schema.String)
}))
