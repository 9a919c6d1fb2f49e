/**
 * What each media kind takes (docs/API.md "Media"): its size limit and its media types. Plain
 * values with no schema, so that the console's browser bundle of the media-type reader
 * (`ConsoleMedia.ts`) carries them without `effect/Schema`. `MessageContent` re-exports them.
 */

/** The kinds whose content is a stored file (the same union as `MessageContent.MediaKind`). */
export type MediaKind = "image" | "document" | "audio" | "video" | "sticker"

/** Limits per media kind (WhatsApp's own); over it: 413 `PAYLOAD_TOO_LARGE` with `details.limit_bytes`. */
export const MEDIA_LIMIT_BYTES: Record<MediaKind, number> = {
  image: 5 * 1024 * 1024,
  video: 16 * 1024 * 1024,
  audio: 16 * 1024 * 1024,
  sticker: 500 * 1024,
  document: 100 * 1024 * 1024
}

/** The media types each kind takes (`null`: any type). */
export const MEDIA_TYPES: Record<MediaKind, ReadonlyArray<string> | null> = {
  image: ["image/jpeg", "image/png", "image/webp"],
  video: ["video/mp4", "video/3gpp"],
  audio: ["audio/ogg", "audio/mpeg", "audio/aac", "audio/mp4"],
  sticker: ["image/webp"],
  document: null
}
