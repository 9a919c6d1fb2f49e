/**
 * Stored media (docs/API.md "Media"): the bytes of an inbound image, voice note, document, ... kept
 * `MEDIA_RETENTION_DAYS` and served by `GET /v1/media/{id}/content`. `pending` while the bytes
 * are fetched from the provider; `ready` once stored; `failed` (with `failure_reason`) when they
 * could not be fetched after bounded retries; `expired` once retention purged the bytes.
 */
import { Schema } from "effect"
import { Id } from "./Ids.js"
import { MediaKind } from "./MessageContent.js"
import { Timestamp } from "./Schemas.js"

export const MediaStatus = Schema.Literal("pending", "ready", "failed", "expired").annotations({
  identifier: "MediaStatus"
})
export type MediaStatus = typeof MediaStatus.Type

/** How long media are kept by default (`MEDIA_RETENTION_DAYS`). */
export const DEFAULT_MEDIA_RETENTION_DAYS = 30

export class Media extends Schema.Class<Media>("Media")({
  id: Id("med"),
  object: Schema.Literal("media"),
  kind: MediaKind,
  mime_type: Schema.String,
  /** null until the bytes are stored */
  size_bytes: Schema.NullOr(Schema.Number),
  /** hex SHA-256 of the bytes (the content's `ETag`); null until they are stored */
  sha256: Schema.NullOr(Schema.String),
  filename: Schema.NullOr(Schema.String),
  status: MediaStatus,
  /** `failed` only: why the bytes could not be fetched */
  failure_reason: Schema.NullOr(Schema.String),
  /** the message that carried it (inbound media) */
  message_id: Schema.NullOr(Id("msg")),
  created_at: Timestamp,
  expires_at: Timestamp
}) {}

/** A message's media as the message record shows it. */
export const MessageMedia = Schema.Struct({
  id: Id("med"),
  status: MediaStatus,
  failure_reason: Schema.NullOr(Schema.String)
}).annotations({ identifier: "MessageMedia" })
export type MessageMedia = typeof MessageMedia.Type
