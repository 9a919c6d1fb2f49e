/**
 * The rows `DispatchQueueRepo` reads: a queued message with what its send needs (`QueuedRow`, and
 * the provider's body it makes: `outgoingBody`), and the sweeper's small reads (ids, heads,
 * dispatch times, the backlog), each decoded column by column.
 */
import { MessageCategory, MessageContent } from "@switchboard/domain"
import { Schema } from "effect"
import { decodeRows, NumberColumn, TimestampColumn } from "../Rows.js"

const Text = Schema.NullOr(Schema.String)

/**
 * What `nextQueued` reads of a queued message: the columns the send needs, its stored file's
 * (`md.*`) and the quoted (`q_*`) and reacted-to (`r_*`) messages' (null when none).
 */
export const QueuedRow = Schema.Struct({
  id: Schema.String,
  to_number: Schema.String,
  body: Schema.String,
  attempts: Schema.Number,
  category: MessageCategory.Category,
  type: MessageContent.MessageType,
  content: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  media_id: Text,
  media_kind: Schema.NullOr(MessageContent.MediaKind),
  mime_type: Text,
  size_bytes: Schema.NullOr(NumberColumn),
  filename: Text,
  q_id: Text,
  q_pid: Text,
  q_direction: Text,
  q_body: Text,
  /** a group chat member's message: the member who wrote it (a number, or `<lid>@lid`) */
  q_participant: Text,
  r_id: Text,
  r_pid: Text,
  r_direction: Text,
  r_body: Text,
  r_participant: Text
})
export type QueuedRow = typeof QueuedRow.Type
export const decodeQueued = decodeRows(QueuedRow)
export const decodeDispatches = decodeRows(Schema.Struct({ to_number: Schema.String, at: TimestampColumn }))
export const decodeHeads = decodeRows(Schema.Struct({ id: Schema.String, head: Schema.String }))
export const decodeIds = decodeRows(Schema.Struct({ id: Schema.String }))
export const decodeStuck = decodeRows(Schema.Struct({ id: Schema.String, attempts: Schema.Number }))
export const decodeChannelIds = decodeRows(Schema.Struct({ channel_id: Schema.String }))
export const decodeBacklog = decodeRows(Schema.Struct({
  channel_id: Schema.String,
  queued: NumberColumn,
  oldest: Schema.NullOr(TimestampColumn)
}))

/**
 * The quoted (`q`) or reacted-to (`r`) message of a row, known by the provider's id (ours are sent
 * under our own id, `ChannelProvider.send`), with the group chat member who wrote it.
 */
export const ref = (row: QueuedRow, p: "q" | "r"): MessageContent.ProviderMessageRef | null => {
  const [id, participant] = [row[`${p}_id` as const], row[`${p}_participant` as const]]
  return id === null ? null : {
    providerMessageId: row[`${p}_pid` as const] ?? id,
    fromMe: row[`${p}_direction` as const] === "outbound",
    body: row[`${p}_body` as const] ?? "",
    ...(participant === null ? {} : { participant })
  }
}

export const outgoingBody = (r: QueuedRow): MessageContent.OutgoingBody => {
  const c = r.content ?? {}
  switch (r.type) {
    case "image":
    case "document":
    case "audio":
    case "video":
    case "sticker":
      return {
        _tag: "media",
        kind: r.type,
        mediaId: r.media_id ?? "",
        mimeType: r.mime_type ?? "application/octet-stream",
        sizeBytes: Number(r.size_bytes ?? 0),
        caption: typeof c["caption"] === "string" ? c["caption"] : null,
        filename: typeof c["filename"] === "string" ? c["filename"] : r.filename,
        voice: c["voice"] === true
      }
    case "location":
      return { _tag: "location", ...(c as unknown as MessageContent.LocationContent) }
    case "reaction": {
      const target = ref(r, "r")
      return target === null
        ? { _tag: "text" }
        : { _tag: "reaction", target, emoji: typeof c["emoji"] === "string" ? c["emoji"] : "" }
    }
    default:
      return { _tag: "text" }
  }
}
