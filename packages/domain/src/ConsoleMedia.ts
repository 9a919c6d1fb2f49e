/**
 * The media-type reader as the console uses it in the browser (docs/CONSOLE.md "Console"): the one
 * parser of media types (`MediaType`, WHATWG MIME Sniffing through `whatwg-mimetype`) and the
 * kinds' types, with no `effect/Schema`. The console's build (scripts/build-console.ts) bundles
 * it into the page and serves it as `media-types.mjs`; `test/consoleMediaTypes.test.ts` reads types
 * with it in a real browser. Plain strings in and out: the page has no `Option`.
 */
import { Option } from "effect"
import { MEDIA_LIMIT_BYTES, type MediaKind } from "./MediaKinds.js"
import { kindOfType } from "./MediaSniff.js"
import * as MediaType from "./MediaType.js"

/** `type` in its canonical form (`audio/ogg; codecs=opus`), or `""` when it is not a media type. */
export const normalize = (type: string): string => Option.getOrElse(MediaType.normalize(type), () => "")

/** The essence (`audio/ogg`) of `type`, lower case; `""` when it is not a media type. */
export const essenceOf = (type: string): string => MediaType.essenceOf(type)

/**
 * The kind a file a contact sends is simulated as (the sandbox's inbound form): WebP is what
 * WhatsApp's stickers are; otherwise the kind whose types take it (`MediaSniff.kindOfType`, the
 * server's own rule), else a document. A text that is no media type is a document.
 */
export const kindOfFile = (type: string): MediaKind => {
  const essence = essenceOf(type)
  if (essence === "image/webp") return "sticker"
  return essence === "" ? "document" : kindOfType(essence)
}

/** The size limit of each kind in bytes (`MEDIA_LIMIT_BYTES`). */
export const limitBytes = (kind: MediaKind): number => MEDIA_LIMIT_BYTES[kind]
