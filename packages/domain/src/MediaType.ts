/**
 * The one reader of media types (docs/API.md "Media"), used at every door a file comes through
 * (upload, multipart part, URL fetch, sandbox and provider inbound), by the send checks and when
 * a file is served: `type/subtype`, case-insensitive, its parameters kept (a WhatsApp voice note
 * is `audio/ogg; codecs=opus`). Parsing is the WHATWG MIME Sniffing algorithm (`whatwg-mimetype`,
 * what browsers run), so surrounding whitespace and upper case are normalised away and a text
 * that is not `type/subtype` (`image/`, mojibake, a header injected after a CRLF) is no type at
 * all. Wildcards (`*\/*`, `image/*`) name no file and are refused too. A client's type is read
 * strictly (`parseStrict`: also RFC 9110's grammar, so nothing is silently dropped); a provider's
 * leniently (`parse`). Pure, no I/O.
 */
import { Option } from "effect"
import { MIMEType } from "whatwg-mimetype"

/** A parsed media type: lower-case `essence` (`audio/ogg`) and its parameters, in order. */
export interface MediaType {
  readonly type: string
  readonly subtype: string
  readonly essence: string
  readonly parameters: ReadonlyArray<readonly [name: string, value: string]>
}

/** The longest media type we store (parameters included). */
export const MAX_LENGTH = 255

/** RFC 9110's `token`: a type, a subtype, a parameter's name or unquoted value. */
const TOKEN_CHARS = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
const TOKEN = new RegExp(`^${TOKEN_CHARS}$`)

/** `text` as a media type, or `None` when it is not `type/subtype` (wildcards included). */
export const parse = (text: string): Option.Option<MediaType> => {
  if (text.length > MAX_LENGTH * 4) return Option.none()
  const parsed = MIMEType.parse(text)
  if (parsed === null || parsed.type === "*" || parsed.subtype === "*") return Option.none()
  const type: MediaType = {
    type: parsed.type,
    subtype: parsed.subtype,
    essence: parsed.essence,
    parameters: [...parsed.parameters]
  }
  return format(type).length > MAX_LENGTH ? Option.none() : Option.some(type)
}

/** RFC 9110 5.6.4: `qdtext` (tab, space, visible ASCII but `"` and `\\`, obs-text) or a quoted pair. */
const QUOTED_STRING = "\"(?:[\\t !#-\\[\\]-~\\x80-\\xff]|\\\\[\\t -~\\x80-\\xff])*\""
const PARAMETER = `${TOKEN_CHARS}=(?:${TOKEN_CHARS}|${QUOTED_STRING})`
/**
 * RFC 9110 8.3.1's `media-type`, with spaces and tabs around it: `type/subtype` then parameters
 * `OWS ";" OWS [ name=value ]`, a value a token or a quoted string. No control character but tab.
 */
const STRICT = new RegExp(`^[ \\t]*${TOKEN_CHARS}/${TOKEN_CHARS}(?:[ \\t]*;[ \\t]*(?:${PARAMETER})?)*[ \\t]*$`)
const PARAMETERS = new RegExp(`;[ \\t]*${PARAMETER}`, "g")

/**
 * `text` as a media type a client wrote (docs/API.md "Media"): `parse`, and the text must also be
 * exactly RFC 9110's grammar, every parameter kept. Where `parse`, as browsers do, drops what it
 * cannot read (`audio/ogg; codecs=opus\r\nX: 1` and `audio/ogg; codecs` are both `audio/ogg`), a
 * control character (a CR/LF included), a parameter that is not `name=value` (a token, or a
 * quoted string), an unclosed quote or a parameter named twice is `None`: a client's door refuses
 * it. What a provider announces is read with `parse` (its file must not be lost).
 */
export const parseStrict = (text: string): Option.Option<MediaType> => {
  if (text.length > MAX_LENGTH * 4 || !STRICT.test(text)) return Option.none()
  return Option.filter(parse(text), (type) => type.parameters.length === (text.match(PARAMETERS) ?? []).length)
}

/**
 * What every door says of a client's type `parseStrict` refuses (422 `VALIDATION_ERROR`,
 * `details.reason = media_type_invalid`): the server, and the SDK's `uploadMedia` before it sends
 * a type no HTTP header can carry. Never the type itself.
 */
export const INVALID = {
  message:
    "The media type is not one as RFC 9110 writes it: type/subtype (for example image/png), then optional ; name=value parameters, each value a token or a quoted string, each name once, and no control character (audio/ogg; codecs=opus); wildcards name no file",
  issue: "Expected a media type: type/subtype, then ; name=value parameters"
} as const

/**
 * A client's declared type as every door reads it before `parseStrict`: only spaces and tabs
 * around it are not part of it (a CR/LF, a no-break space or a BOM stays, and is refused).
 */
export const trimClient = (text: string): string => text.replace(/^[ \t]+|[ \t]+$/g, "")

/** A parameter value as RFC 9110 writes it: a token as is, anything else quoted. */
const quoted = (value: string) => TOKEN.test(value) ? value : `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`

/**
 * The canonical text of a media type, as stored and sent on: lower-case essence, then each
 * parameter as `; name=value` (`audio/ogg; codecs=opus`, the form WhatsApp uses).
 */
export const format = (type: MediaType): string =>
  type.essence + type.parameters.map(([name, value]) => `; ${name}=${quoted(value)}`).join("")

/** `text` in its canonical form, or `None` when it is not a media type. */
export const normalize = (text: string): Option.Option<string> => Option.map(parse(text), format)

/** The essence (`audio/ogg`) of a stored or declared type; `""` when it is not a media type. */
export const essenceOf = (text: string): string =>
  Option.match(parse(text), { onNone: () => "", onSome: (t) => t.essence })

/** A parameter of a media type (`codecs`), case-insensitive by name. */
export const parameter = (type: MediaType, name: string): string | undefined =>
  type.parameters.find(([n]) => n === name.toLowerCase())?.[1]

/** The type of a voice note, the only one WhatsApp plays as one (docs/API.md "Media"). */
export const VOICE_NOTE_TYPE = "audio/ogg; codecs=opus"

/**
 * Whether a file of the `stored` type can go as a voice note (`voice: true`): Ogg, with no codec
 * named or Opus. MP3, AAC, MP4 audio or Ogg Vorbis sent as a voice note is a message WhatsApp's
 * apps may not play, so every door that takes `voice` refuses them (send, sandbox inbound).
 */
export const isVoiceNoteType = (stored: string): boolean => {
  const parsed = parse(stored)
  if (Option.isNone(parsed) || parsed.value.essence !== "audio/ogg") return false
  const codecs = parameter(parsed.value, "codecs")
  return codecs === undefined || codecs.toLowerCase() === "opus"
}

/**
 * The type a voice note goes to WhatsApp with: WhatsApp plays a voice note (`ptt`) only as
 * `audio/ogg; codecs=opus`, so an Ogg Opus file goes as exactly that (a plain `audio/ogg` gains its
 * codec, other parameters are left out). Any other type is sent on as stored.
 */
export const voiceNoteType = (stored: string): string => {
  if (isVoiceNoteType(stored)) return VOICE_NOTE_TYPE
  return Option.match(parse(stored), { onNone: () => stored, onSome: format })
}
