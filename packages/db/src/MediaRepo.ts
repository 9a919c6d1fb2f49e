/**
 * Media rows (`media`, docs/API.md "Media"). An inbound file's row is also its durable download job:
 * `pending` with the provider's `source`, claimed by the media worker (`claimed_at`, one attempt
 * counted), settled `ready` or `failed`, or given back for a later attempt. A claim left by a
 * runner that died is released when the worker starts again (it is a cluster singleton: while it
 * starts, no other instance holds a claim). The bytes are `MediaStore`'s.
 */
import { SqlClient } from "@effect/sql"
import { Ids, Media, MessageContent } from "@switchboard/domain"
import { Config, Effect, Option, Schema } from "effect"
import * as Notifications from "./Notifications.js"
import { decodeRows, dieOnDatabaseError, IdRow, iso, TimestampColumn } from "./Rows.js"

/** `MEDIA_RETENTION_DAYS`: how long stored media are kept (default 30). */
export const mediaRetentionDays = Config.integer("MEDIA_RETENTION_DAYS").pipe(
  Config.validate({ message: "Expected a whole number of days >= 1", validation: (n) => n >= 1 }),
  Config.withDefault(Media.DEFAULT_MEDIA_RETENTION_DAYS)
)

/** A row of `media` (`COLUMNS`): the resource's columns and its download job's. */
export const MediaColumns = Schema.Struct({
  id: Ids.Id("med"),
  workspace_id: Ids.Id("ws"),
  kind: MessageContent.MediaKind,
  mime_type: Schema.String,
  filename: Schema.NullOr(Schema.String),
  size_bytes: Schema.NullOr(Schema.Union(Schema.Number, Schema.NumberFromString)),
  sha256: Schema.NullOr(Schema.String),
  status: Media.MediaStatus,
  failure_reason: Schema.NullOr(Schema.String),
  channel_id: Schema.NullOr(Ids.Id("ch")),
  message_id: Schema.NullOr(Ids.Id("msg")),
  source: Schema.NullOr(Schema.Unknown),
  expected_size: Schema.NullOr(Schema.Union(Schema.Number, Schema.NumberFromString)),
  expected_sha256: Schema.NullOr(Schema.String),
  attempts: Schema.Number,
  created_at: TimestampColumn,
  expires_at: TimestampColumn
})
/** An inbound file's download as the media worker claims it (`claimDue`): the row's columns, decoded. */
export type MediaDownload = typeof MediaColumns.Type
const decodeDownloads = Schema.decodeUnknown(Schema.Array(MediaColumns))

/**
 * A row of `media` decoded to the domain's `Media`: the one shape of the resource
 * (docs/ARCHITECTURE.md "Adding a resource"). The ids are checked and typed (`med_...`,
 * `msg_...`) while decoding, the timestamps become the wire's ISO strings, the download job's
 * columns are left out; no mapper, no cast.
 */
export const MediaRow = Schema.transform(
  MediaColumns.pipe(Schema.pick(
    "id",
    "kind",
    "mime_type",
    "size_bytes",
    "sha256",
    "filename",
    "status",
    "failure_reason",
    "message_id",
    "created_at",
    "expires_at"
  )),
  Media.Media,
  {
    strict: true,
    decode: (row) => ({
      ...row,
      object: "media" as const,
      created_at: iso(row.created_at),
      expires_at: iso(row.expires_at)
    }),
    encode: ({ object: _, ...media }) => media
  }
)
const decodeMedia = Schema.decodeUnknown(Schema.Array(MediaRow))
const decodeMediaIds = decodeRows(IdRow("med"))
const decodeExpiring = decodeRows(Schema.Struct({ id: Ids.Id("med"), message_id: Schema.NullOr(Ids.Id("msg")) }))

const COLUMNS = `id, workspace_id, kind, mime_type, filename, size_bytes, sha256, status, failure_reason, channel_id,
  message_id, source, expected_size, expected_sha256, attempts, created_at, expires_at`

export class MediaRepo extends Effect.Service<MediaRepo>()("@switchboard/db/MediaRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(COLUMNS)

    /** An inbound file whose bytes are still at the provider: `pending`, due at once. */
    const createInbound = Effect.fn("MediaRepo.createInbound")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly channelId: string
      readonly messageId: string
      readonly kind: MessageContent.MediaKind
      readonly mimeType: string
      readonly filename: string | null
      readonly expectedSize: number | null
      readonly expectedSha256: string | null
      readonly source: unknown
      readonly now: string
      readonly expiresAt: string
    }) {
      // the media worker hears of it as the transaction commits (`Notifications`)
      yield* sql`WITH inserted AS (INSERT INTO media (id, workspace_id, kind, mime_type, filename, status, channel_id,
          message_id, source, expected_size, expected_sha256, next_attempt_at, created_at, updated_at, expires_at)
        VALUES (${input.id}, ${input.workspaceId}, ${input.kind}, ${input.mimeType}, ${input.filename}, 'pending',
          ${input.channelId}, ${input.messageId}, ${JSON.stringify(input.source ?? null)}::jsonb, ${input.expectedSize},
          ${input.expectedSha256}, ${input.now}, ${input.now}, ${input.now}, ${input.expiresAt}) RETURNING id)
        SELECT pg_notify(${Notifications.MEDIA_DUE}, id) FROM inserted`
    }, dieOnDatabaseError)

    /**
     * An upload whose bytes are streaming in: `pending` with no source and no due time, so the
     * download worker never claims it. It becomes `ready` with `settle`, or is `remove`d.
     */
    const createUpload = Effect.fn("MediaRepo.createUpload")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly kind: MessageContent.MediaKind
      readonly mimeType: string
      readonly filename: string | null
      readonly now: string
      readonly expiresAt: string
    }) {
      yield* sql`INSERT INTO media (id, workspace_id, kind, mime_type, filename, status, created_at, updated_at, expires_at)
        VALUES (${input.id}, ${input.workspaceId}, ${input.kind}, ${input.mimeType}, ${input.filename}, 'pending',
          ${input.now}, ${input.now}, ${input.expiresAt})`
    }, dieOnDatabaseError)

    /** An upload refused or interrupted: the row and its bytes go (nothing half-stored stays). */
    const remove = Effect.fn("MediaRepo.remove")(function*(id: string) {
      yield* sql`DELETE FROM media WHERE id = ${id}`
    }, dieOnDatabaseError)

    /**
     * A file fetched for a send that was then refused: its row goes (its chunks with it), unless a
     * message refers to it after all (a send that committed as it was interrupted). Whether it went;
     * bytes kept in files (`MEDIA_STORE=filesystem`) are the caller's to purge then.
     */
    const removeUnsent = Effect.fn("MediaRepo.removeUnsent")(function*(id: string) {
      const rows = yield* decodeMediaIds(
        yield* sql`DELETE FROM media WHERE id = ${id}
          AND NOT EXISTS (SELECT 1 FROM messages WHERE media_id = ${id}) RETURNING id`
      )
      return rows.length > 0
    }, dieOnDatabaseError)

    const find = Effect.fn("MediaRepo.find")(function*(workspaceId: string, id: string) {
      const rows = yield* decodeMedia(
        yield* sql`SELECT ${columns} FROM media WHERE workspace_id = ${workspaceId} AND id = ${id}`
      )
      return Option.fromNullable(rows[0])
    }, dieOnDatabaseError)

    /** Any workspace (the provider of a sandbox re-sends a stored media by id). */
    const findById = Effect.fn("MediaRepo.findById")(function*(id: string) {
      const rows = yield* decodeMedia(yield* sql`SELECT ${columns} FROM media WHERE id = ${id}`)
      return Option.fromNullable(rows[0])
    }, dieOnDatabaseError)

    /** Claims up to `limit` due downloads (one attempt counted each). */
    const claimDue = Effect.fn("MediaRepo.claimDue")(function*(now: string, limit: number) {
      return yield* decodeDownloads(
        yield* sql`UPDATE media SET claimed_at = ${now}, attempts = attempts + 1, updated_at = ${now}
          WHERE id IN (SELECT id FROM media WHERE status = 'pending' AND claimed_at IS NULL
            AND next_attempt_at <= ${now} ORDER BY next_attempt_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING ${columns}`
      )
    }, dieOnDatabaseError)

    /** The worker starts: claims of a previous instance (a runner that died mid-download) are free again. */
    const releaseClaims = Effect.fn("MediaRepo.releaseClaims")(function*() {
      const rows = yield* sql`UPDATE media SET claimed_at = NULL WHERE status = 'pending' AND claimed_at IS NOT NULL
        RETURNING id`
      return rows.length
    }, dieOnDatabaseError)

    /** An attempt failed and another is allowed: due again at `nextAttemptAt`. */
    const retryLater = Effect.fn("MediaRepo.retryLater")(function*(id: string, nextAttemptAt: string, now: string) {
      yield* sql`UPDATE media SET claimed_at = NULL, next_attempt_at = ${nextAttemptAt}, updated_at = ${now}
        WHERE id = ${id} AND status = 'pending'`
    }, dieOnDatabaseError)

    /** The download ended: `ready` with the stored bytes' size and hash, or `failed` with a reason. */
    const settle = Effect.fn("MediaRepo.settle")(function*(input: {
      readonly id: string
      readonly status: "ready" | "failed"
      readonly sizeBytes: number | null
      readonly sha256: string | null
      readonly failure: string | null
      readonly now: string
    }) {
      const rows = yield* sql`UPDATE media SET status = ${input.status}, size_bytes = ${input.sizeBytes},
          sha256 = ${input.sha256}, failure_reason = ${input.failure}, source = NULL, claimed_at = NULL,
          next_attempt_at = NULL, updated_at = ${input.now}
        WHERE id = ${input.id} AND status = 'pending' RETURNING id`
      return rows.length > 0
    }, dieOnDatabaseError)

    /**
     * Up to `limit` media past retention whose bytes are still kept (or failed ones past it), each
     * with the message it came with (`message_id`; null for an upload).
     */
    const dueForExpiry = Effect.fn("MediaRepo.dueForExpiry")(function*(now: string, limit: number) {
      const rows = yield* decodeExpiring(
        yield* sql`SELECT id, message_id FROM media WHERE status IN ('ready', 'failed')
        AND expires_at <= ${now} ORDER BY expires_at LIMIT ${limit}`
      )
      return rows.map((r) => ({ id: r.id, messageId: r.message_id }))
    }, dieOnDatabaseError)

    /** Retention ended: `expired` (the bytes are purged by the caller in the same transaction). */
    const expire = Effect.fn("MediaRepo.expire")(function*(id: string, now: string) {
      const rows = yield* sql`UPDATE media SET status = 'expired', source = NULL, updated_at = ${now}
        WHERE id = ${id} AND status IN ('ready', 'failed') RETURNING id`
      return rows.length > 0
    }, dieOnDatabaseError)

    /**
     * Uploads left `pending` since before `before` (a process killed mid-upload: no read sees them):
     * removed with their bytes, up to `limit`; their ids. Inbound downloads (a message's media, due
     * at a time) are never touched.
     */
    const removeStaleUploads = Effect.fn("MediaRepo.removeStaleUploads")(function*(before: string, limit: number) {
      const rows = yield* decodeMediaIds(
        yield* sql`DELETE FROM media WHERE id IN (SELECT id FROM media
          WHERE status = 'pending' AND next_attempt_at IS NULL AND message_id IS NULL AND created_at < ${before}
          ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
        RETURNING id`
      )
      return rows.map((r) => r.id)
    }, dieOnDatabaseError)

    return {
      createInbound,
      removeStaleUploads,
      createUpload,
      remove,
      removeUnsent,
      find,
      findById,
      claimDue,
      releaseClaims,
      retryLater,
      settle,
      dueForExpiry,
      expire
    } as const
  })
}) {}
