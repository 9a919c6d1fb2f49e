/**
 * What a file is, decided from its first bytes rather than from the type the client declared
 * (docs/API.md "Media"), and the one check every file passes whatever its door (`checkFile`: upload,
 * multipart part, URL fetch, sandbox and provider inbound, and a send of a stored media as a kind):
 * a small table of signatures for the types the media kinds take (`MEDIA_TYPES`) and a few more a
 * document must not be mistaken for, so a `.exe` announced as `image/jpeg`, a PNG announced as
 * `application/json` or multipart framing posted raw is refused before it is stored or sent.
 * Pure functions, no I/O.
 */
import { Option } from "effect"
import { MEDIA_TYPES, type MediaKind } from "./MediaKinds.js"
import * as MediaType from "./MediaType.js"

/** How many leading bytes `sniff` needs to decide (a shorter file is decided on what it has). */
export const SNIFF_BYTES = 256

const ascii = (bytes: Uint8Array, at: number, text: string) => {
  if (bytes.byteLength < at + text.length) return false
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false
  return true
}

/** ISO base media brands that are still images (HEIF, AVIF): a phone's photo, not a video. */
const IMAGE_BRANDS = ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1", "avif", "avis"]

/** `multipart/form-data` framing: `--boundary` CRLF then a part's `Content-Disposition: form-data`. */
const MULTIPART = /^--[^\r\n]{1,70}\r\ncontent-disposition:[ \t]*form-data/i

/**
 * The media types the leading bytes can be (several for containers: an MP4 file is `video/mp4`
 * or `audio/mp4`), or an empty list when they match no signature we know. `strong` leaves out
 * the bare MPEG frame sync (two bytes a UTF-16 text or any binary file may start with).
 */
export const sniff = (head: Uint8Array, options: { readonly strong?: boolean } = {}): ReadonlyArray<string> => {
  const b = head
  if (b.byteLength >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return ["image/jpeg"]
  if (b.byteLength >= 8 && b[0] === 0x89 && ascii(b, 1, "PNG\r\n\x1a\n")) return ["image/png"]
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WEBP")) return ["image/webp"]
  if (ascii(b, 0, "GIF87a") || ascii(b, 0, "GIF89a")) return ["image/gif"]
  if (ascii(b, 0, "OggS")) return ["audio/ogg"]
  if (ascii(b, 4, "ftyp")) {
    // ISO base media: the major brand says 3GPP or a still image; every other brand (isom,
    // mp42, M4A, ...) is MP4
    if (ascii(b, 8, "3gp") || ascii(b, 8, "3g2")) return ["video/3gpp"]
    if (IMAGE_BRANDS.some((brand) => ascii(b, 8, brand))) return ["image/heif"]
    return ["video/mp4", "audio/mp4"]
  }
  if (ascii(b, 0, "ID3")) return ["audio/mpeg"]
  if (ascii(b, 0, "--") && MULTIPART.test(String.fromCharCode(...b.subarray(0, SNIFF_BYTES)))) {
    return ["multipart/form-data"]
  }
  if (!options.strong && b.byteLength >= 2 && b[0] === 0xff && (b[1]! & 0xe0) === 0xe0) {
    // MPEG audio frame sync: layer bits 00 is ADTS (AAC), any other layer is MP3
    return (b[1]! & 0x06) === 0 ? ["audio/aac"] : ["audio/mpeg"]
  }
  return []
}

/** A declared `Content-Type`'s essence, lower case (`IMAGE/JPEG; q=1` -> `image/jpeg`); `""` if none. */
export const essence = (contentType: string): string => MediaType.essenceOf(contentType)

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
 * (an essence): the kind takes the type, and the bytes are that type. Documents take any type
 * whose family the bytes do not contradict (`checkFile`).
 */
export const acceptsBytes = (kind: MediaKind, type: string, head: Uint8Array): boolean => {
  const types = MEDIA_TYPES[kind]
  if (types === null) return documentAgrees(type, head)
  return types.includes(type) && sniff(head).includes(type)
}

/** The family a type belongs to for a document: audio and video share containers (Ogg, MP4). */
const family = (essence: string) => {
  const [top] = essence.split("/")
  if (top === "audio" || top === "video" || essence === "application/ogg" || essence === "application/mp4") {
    return "av"
  }
  return top
}

/**
 * Types whose every file starts with the signature `sniff` knows: bytes without it are not of the
 * type, whatever was declared (an `.exe` uploaded as a `image/png` document). MP3 and AAC are not
 * here: a file may start with a bare frame, which `strong` leaves out.
 */
const ALWAYS_SIGNED: ReadonlySet<string> = new Set([
  "image/jpeg",
  "image/png",
  "image/webp",
  "image/gif",
  "image/heif",
  "audio/ogg",
  "audio/mp4",
  "video/mp4",
  "video/3gpp"
])

/** Other names of a type whose files carry its signature: declared so, the bytes agree. */
const SAME_SIGNATURE: Readonly<Record<string, ReadonlyArray<string>>> = {
  "image/png": ["image/apng", "image/vnd.mozilla.apng", "image/x-png"],
  "image/jpeg": ["image/jpg", "image/pjpeg"],
  "image/heif": ["image/heic", "image/avif", "image/heif-sequence", "image/heic-sequence", "image/avif-sequence"]
}

/**
 * A document's declared type against its bytes: bytes with a strong signature must be of the
 * declared type, or of its family for audio and video, whose containers many types share (a PNG
 * declared `application/json` or `image/gif` is not; a QuickTime video declared `video/quicktime`
 * is); bytes that lack the signature every file of the declared type has are refused; other bytes
 * we cannot name are taken as declared.
 */
const documentAgrees = (type: string, head: Uint8Array) => {
  const sniffed = sniff(head, { strong: true })
  if (sniffed.length === 0) return !ALWAYS_SIGNED.has(type)
  if (sniffed.includes("multipart/form-data")) return false
  return sniffed.some((s) =>
    s === type || SAME_SIGNATURE[s]?.includes(type) === true || (family(s) === "av" && family(type) === "av")
  )
}

/** A type declared that names nothing: the type is read from the bytes. */
export const undeclared = (essence: string) => essence === "" || essence === "application/octet-stream"

/** Why a file is refused: no bytes, a declared text that is not a media type, or type and bytes that disagree. */
export type FileRefusal =
  | { readonly _tag: "empty" }
  | { readonly _tag: "type_invalid" }
  | {
    readonly _tag: "type_unsupported"
    /** the kind it would be stored or sent as */
    readonly kind: MediaKind
    /** the types the kind takes (`null`: a document, any type the bytes agree with) */
    readonly expected: ReadonlyArray<string> | null
    /** what the bytes are, when they have a signature we know */
    readonly sniffed: string | null
  }

/** A file that passed: its kind and the type to store (canonical, parameters kept). */
export interface FileAccepted {
  readonly kind: MediaKind
  readonly mimeType: string
}

/**
 * The one check of a file, whatever its door: `declared` is the type the client or the provider
 * named (any text; `undefined` or `application/octet-stream` when none), `kind` the kind asked
 * for (else the kind that takes the type, else `document`), `head` the file's first
 * `SNIFF_BYTES` bytes. Without a declared type the type is read from the bytes. A client's type
 * is read strictly (`MediaType.parseStrict`: odd parameters refused); `lenient` reads it as
 * `MediaType.parse` does, for what a provider announced or we stored (never lost for a parameter).
 */
export const checkFile = (input: {
  readonly kind: MediaKind | undefined
  readonly declared: string | undefined
  readonly head: Uint8Array
  readonly lenient?: boolean
}): { readonly _tag: "accepted"; readonly file: FileAccepted } | {
  readonly _tag: "refused"
  readonly refusal: FileRefusal
} => {
  const refused = (refusal: FileRefusal) => ({ _tag: "refused" as const, refusal })
  if (input.head.byteLength === 0) return refused({ _tag: "empty" })
  // a client's type: only spaces and tabs around it are not part of it (a CR/LF, a no-break
  // space, a BOM around it are refused by the strict reader, whatever the door)
  const text = input.lenient === true
    ? input.declared?.trim() ?? ""
    : MediaType.trimClient(input.declared ?? "")
  const parsed = text === ""
    ? Option.none()
    : input.lenient === true
    ? MediaType.parse(text)
    : MediaType.parseStrict(text)
  if (text !== "" && Option.isNone(parsed)) return refused({ _tag: "type_invalid" })
  const declared = Option.getOrUndefined(parsed)
  const sniffed = sniff(input.head)
  const unsupported = (kind: MediaKind) =>
    refused({ _tag: "type_unsupported", kind, expected: MEDIA_TYPES[kind], sniffed: sniffed[0] ?? null })
  if (declared === undefined || undeclared(declared.essence)) {
    const types = input.kind === undefined ? null : MEDIA_TYPES[input.kind]
    const read = types === null ?
      sniffed.find((s) => kindOfType(s) !== "document") :
      sniffed.find((s) => types.includes(s))
    const kind = input.kind ?? (read === undefined ? "document" : kindOfType(read))
    if (read === undefined) {
      if (kind !== "document") return unsupported(kind)
      if (sniffed.includes("multipart/form-data")) return unsupported(kind)
      return { _tag: "accepted", file: { kind, mimeType: "application/octet-stream" } }
    }
    return { _tag: "accepted", file: { kind, mimeType: withCodec(read, input.head) ?? read } }
  }
  const kind = input.kind ?? kindOfType(declared.essence)
  if (!acceptsBytes(kind, declared.essence, input.head)) return unsupported(kind)
  // an Ogg file's codec is in its bytes: one declared otherwise is not what the bytes are
  const codec = declared.essence === "audio/ogg" ? oggCodec(input.head) : undefined
  const named = MediaType.parameter(declared, "codecs")?.toLowerCase()
  if (codec !== undefined && named !== undefined && named !== codec) return unsupported(kind)
  const mimeType = MediaType.format(declared)
  return {
    _tag: "accepted",
    file: { kind, mimeType: named === undefined ? withCodec(mimeType, input.head) ?? mimeType : mimeType }
  }
}

/**
 * The codec of an Ogg file, from the first packet of its first page (`OpusHead` for Opus, as a
 * WhatsApp voice note is; `\x01vorbis`, `\x7fFLAC`, `Speex`), when it is one we know.
 */
export const oggCodec = (head: Uint8Array): "opus" | "vorbis" | "flac" | "speex" | undefined => {
  if (!ascii(head, 0, "OggS") || head.byteLength < 27) return undefined
  // the page header is 27 bytes and its segment table as long as byte 26 says
  const at = 27 + head[26]!
  if (ascii(head, at, "OpusHead")) return "opus"
  if (ascii(head, at, "\x01vorbis")) return "vorbis"
  if (ascii(head, at, "\x7fFLAC")) return "flac"
  if (ascii(head, at, "Speex   ")) return "speex"
  return undefined
}

/** `audio/ogg` with the codec its bytes carry (`audio/ogg; codecs=vorbis`); `undefined` when not read. */
const withCodec = (type: string, head: Uint8Array): string | undefined => {
  const codec = oggCodec(head)
  return codec === undefined || MediaType.essenceOf(type) !== "audio/ogg" ? undefined : `${type}; codecs=${codec}`
}
