/**
 * What an uploaded file is, decided from its first bytes rather than from the `Content-Type` the
 * client declared (docs/API.md "Media"): a small table of signatures for exactly the types the media
 * kinds take (`MEDIA_TYPES`), so a `.exe` announced as `image/jpeg` is refused before it is stored
 * or sent. Documents take any type: their bytes are not checked. Pure functions, no I/O.
 */
import type { MediaKind } from "./MessageContent.js"
import { MEDIA_TYPES } from "./MessageContent.js"

/** How many leading bytes `sniff` needs to decide (a shorter file is decided on what it has). */
export const SNIFF_BYTES = 12

const ascii = (bytes: Uint8Array, at: number, text: string) => {
  if (bytes.byteLength < at + text.length) return false
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false
  return true
}

/**
 * The media types the leading bytes can be (several for containers: an MP4 file is `video/mp4`
 * or `audio/mp4`), or an empty list when they match none of the types the kinds take.
 */
export const sniff = (head: Uint8Array): ReadonlyArray<string> => {
  const b = head
  if (b.byteLength >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return ["image/jpeg"]
  if (b.byteLength >= 8 && b[0] === 0x89 && ascii(b, 1, "PNG\r\n\x1a\n")) return ["image/png"]
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WEBP")) return ["image/webp"]
  if (ascii(b, 0, "OggS")) return ["audio/ogg"]
  if (ascii(b, 4, "ftyp")) {
    // ISO base media: the major brand says 3GPP; every other brand (isom, mp42, M4A, ...) is MP4
    if (ascii(b, 8, "3gp") || ascii(b, 8, "3g2")) return ["video/3gpp"]
    return ["video/mp4", "audio/mp4"]
  }
  if (ascii(b, 0, "ID3")) return ["audio/mpeg"]
  if (b.byteLength >= 2 && b[0] === 0xff && (b[1]! & 0xe0) === 0xe0) {
    // MPEG audio frame sync: layer bits 00 is ADTS (AAC), any other layer is MP3
    return (b[1]! & 0x06) === 0 ? ["audio/aac"] : ["audio/mpeg"]
  }
  return []
}

/** A declared `Content-Type` without parameters, lower case (`IMAGE/JPEG; q=1` -> `image/jpeg`). */
export const essence = (contentType: string): string => contentType.split(";")[0]!.trim().toLowerCase()

/**
 * The kind an upload is stored as when the client does not name one: the first kind (image,
 * video, audio) that takes the declared type; anything else is a document.
 */
export const kindOfType = (type: string): MediaKind => {
  for (const kind of ["image", "video", "audio"] as const) {
    if (MEDIA_TYPES[kind]!.includes(type)) return kind
  }
  return "document"
}

/**
 * Whether a file whose leading bytes are `head` may be stored as `kind` with the declared `type`
 * (already `essence`d): the kind takes the type, and the bytes are that type. Documents take any
 * type and any bytes.
 */
export const acceptsBytes = (kind: MediaKind, type: string, head: Uint8Array): boolean => {
  const types = MEDIA_TYPES[kind]
  if (types === null) return true
  return types.includes(type) && sniff(head).includes(type)
}
