/**
 * What a linked device hears, translated into the provider-neutral `InboundContent` (README
 * "Messages" and "What a QR channel records"). One pure function over Baileys'
 * `WAMessage`: every kind WhatsApp sends is either content of a modelled type, `unsupported` with
 * WhatsApp's own name of the kind, or ignored for a stated reason, never skipped unseen.
 *
 * Ignored on purpose (the caller counts them in `switchboard_inbound_messages_total` with
 * `outcome="ignored"` and the reason, and logs them):
 * - `group_update`: a change notice of a group (a stub), read again instead (`QrGroupChats`). A
 *   group's messages are content with `groupChat`, the participant as `sender`, and `mentions`.
 * - `status_broadcast`, `broadcast`, `newsletter`: status posts, broadcast lists' echo and
 *   channels. A status post names its poster in `participant`/`remoteJidAlt`, so the chat is
 *   checked before any sender: a status by a LID-addressed contact never becomes a direct message.
 * - `own_message`: sent by the linked number itself (our sends, or from the phone).
 * - `no_content`: a stub without a message that none of the cases below explains.
 *
 * A message whose content has not reached the linked device is recorded at once as `unsupported`
 * with one of `MessageContent.AWAITING_CONTENT_KINDS`: `view_once` (WhatsApp's
 * `<unavailable type="view_once"/>`: Baileys sets `key.isViewOnce`), `placeholder` (delivered
 * without content; Baileys asks the phone for it) and `ciphertext` (Baileys could not decrypt it
 * and asks the sender again). When the content comes under the same id, it completes that message.
 * - `protocol`: WhatsApp's signalling between devices (disappearing-mode settings, key shares,
 *   history-sync notices), which nobody wrote; revokes and edits are messages and are kept.
 * - `no_sender`: a chat address that names neither a phone number nor a LID.
 */
import { MediaType, MessageContent } from "@switchboard/domain"
import { getContentType, NO_MESSAGE_FOUND_ERROR_TEXT, proto, toNumber, type WAMessage } from "baileys"
import { Option } from "effect"
import { decode, E164_DIGITS, senderOf } from "./BaileysJids.js"
import * as BaileysWrappers from "./BaileysWrappers.js"

export type IgnoredReason =
  | "group_update"
  | "status_broadcast"
  | "broadcast"
  | "newsletter"
  | "own_message"
  | "no_content"
  | "protocol"
  | "no_sender"

/** A message recorded as `content`. */
export interface Translated {
  readonly _tag: "content"
  readonly content: MessageContent.InboundContent
  /** WhatsApp's name of the kind (`imageMessage`, ...), for logs and metrics */
  readonly kind: string
  /**
   * The file's announced media type is not one a client may send (`MediaType.parseStrict`): it
   * was read leniently (odd parameters dropped) or replaced by the kind's default; logged.
   */
  readonly oddMediaType?: true
}

/** A message not recorded, and why; `kind` and `sender` (a jid) for the log line, never its text. */
export interface Ignored {
  readonly _tag: "ignored"
  readonly reason: IgnoredReason
  /** the type it would have been recorded as (`none`: no content, or signalling), for the metric */
  readonly type: MessageContent.MessageType | "none"
  readonly providerMessageId: string
  readonly kind: string | null
  readonly sender: string | null
}

export type Translation = Translated | Ignored

/**
 * What the QR provider needs to download an inbound file later, possibly in another process:
 * the message's key and its media member, as protobuf JSON (bytes as base64, 64-bit numbers as
 * strings). Baileys downloads from it and, when the media host answers 404/410, asks the
 * sender's phone to upload it again with the same key.
 */
export interface BaileysMediaSource {
  readonly key: {
    readonly id: string
    readonly remoteJid: string
    readonly fromMe: boolean
    readonly participant: string | null
  }
  /** `{imageMessage: {...}}` (one member), `proto.Message` JSON */
  readonly message: Record<string, unknown>
}

const MEDIA: Record<string, MessageContent.MediaKind> = {
  imageMessage: "image",
  videoMessage: "video",
  audioMessage: "audio",
  documentMessage: "document",
  stickerMessage: "sticker",
  // a video note (round video) and an animated GIF are videos to everyone else
  ptvMessage: "video"
}

const DEFAULT_MIME: Record<MessageContent.MediaKind, string> = {
  image: "image/jpeg",
  video: "video/mp4",
  audio: "audio/ogg",
  document: "application/octet-stream",
  sticker: "image/webp"
}

const text = (value: string | null | undefined): string => value ?? ""

const nullable = (value: string | null | undefined): string | null =>
  value === undefined || value === null || value === "" ? null : value

const hex = (bytes: Uint8Array | string | null | undefined): string | null => {
  if (bytes === undefined || bytes === null || bytes.length === 0) return null
  return (typeof bytes === "string" ? Buffer.from(bytes, "base64") : Buffer.from(bytes)).toString("hex")
}

const count = (value: unknown): number | null => {
  if (value === undefined || value === null) return null
  const n = toNumber(value as number)
  return Number.isFinite(n) && n >= 0 ? n : null
}

/** `TEL;type=CELL;waid=15551234567:+1 555-123-4567` -> `+15551234567`; without `waid`, the number as given. */
const phonesOfVcard = (vcard: string | null | undefined): Array<string> => {
  const phones: Array<string> = []
  for (const line of text(vcard).split(/\r?\n/)) {
    if (!/^(item\d+\.)?TEL[;:]/i.test(line)) continue
    const waid = /waid=(\d+)/i.exec(line)?.[1]
    const given = line.slice(line.indexOf(":") + 1).trim()
    const phone = waid !== undefined && E164_DIGITS.test(waid) ? `+${waid}` : given
    if (phone !== "") phones.push(phone)
  }
  return phones
}

const contactOf = (card: proto.Message.IContactMessage): MessageContent.SharedContact => ({
  name: text(card.displayName),
  phones: phonesOfVcard(card.vcard)
})

/** The text of an edited message's new version (a text, or a media caption). */
const editedText = (message: proto.IMessage | null | undefined): string | undefined => {
  const inner = BaileysWrappers.open(message).content
  if (!inner) return undefined
  const caption = inner.imageMessage?.caption ?? inner.videoMessage?.caption ?? inner.documentMessage?.caption
  const value = inner.conversation ?? inner.extendedTextMessage?.text ?? caption
  return value === null ? undefined : value
}

/** protobuf JSON of one member of `proto.Message` (bytes base64), for `BaileysMediaSource`. */
const messageJson = (type: string, member: unknown): Record<string, unknown> =>
  proto.Message.toObject(proto.Message.fromObject({ [type]: member }), {
    longs: String,
    enums: String,
    bytes: String
  })

type Body =
  | { readonly body: MessageContent.InboundBody; readonly oddMediaType?: true }
  | { readonly ignored: "protocol" }

const bodyOf = (message: WAMessage, content: proto.IMessage, type: string): Body => {
  const media = MEDIA[type]
  if (media !== undefined) {
    const m = (content as Record<
      string,
      proto.Message.IImageMessage & proto.Message.IDocumentMessage & {
        ptt?: boolean | null
      }
    >)[type]!
    const announced = nullable(m.mimetype) ?? ""
    return {
      // a type a client's door would refuse (odd parameters, control characters): kept as read
      // leniently (the file is never lost for it), and said in the log (`QrInbound`)
      ...(announced !== "" && Option.isNone(MediaType.parseStrict(announced)) ? { oddMediaType: true as const } : {}),
      body: {
        _tag: "media",
        kind: media,
        // the one reader of media types: canonical, parameters kept (`audio/ogg; codecs=opus`)
        mimeType: Option.getOrElse(MediaType.normalize(announced), () => DEFAULT_MIME[media]),
        caption: media === "audio" || media === "sticker" ? null : nullable(m.caption),
        filename: media === "document" ? nullable(m.fileName) : null,
        voice: media === "audio" && m.ptt === true,
        sizeBytes: count(m.fileLength),
        sha256: hex(m.fileSha256),
        source: {
          key: {
            id: message.key.id ?? "",
            remoteJid: message.key.remoteJid ?? "",
            fromMe: message.key.fromMe === true,
            participant: message.key.participant ?? null
          },
          message: messageJson(type, m)
        } satisfies BaileysMediaSource
      }
    }
  }
  switch (type) {
    case "conversation":
      return { body: { _tag: "text", body: text(content.conversation) } }
    case "extendedTextMessage":
      return { body: { _tag: "text", body: text(content.extendedTextMessage?.text) } }
    case "locationMessage": {
      const l = content.locationMessage
      return {
        body: {
          _tag: "location",
          latitude: l?.degreesLatitude ?? 0,
          longitude: l?.degreesLongitude ?? 0,
          name: nullable(l?.name),
          address: nullable(l?.address)
        }
      }
    }
    case "liveLocationMessage": {
      // a live location is recorded where it started; its updates are not followed
      const l = content.liveLocationMessage
      return {
        body: {
          _tag: "location",
          latitude: l?.degreesLatitude ?? 0,
          longitude: l?.degreesLongitude ?? 0,
          name: null,
          address: null
        }
      }
    }
    case "contactMessage":
      return { body: { _tag: "contacts", contacts: [contactOf(content.contactMessage ?? {})] } }
    case "contactsArrayMessage":
      return { body: { _tag: "contacts", contacts: (content.contactsArrayMessage?.contacts ?? []).map(contactOf) } }
    case "reactionMessage":
      return {
        body: {
          _tag: "reaction",
          targetProviderMessageId: text(content.reactionMessage?.key?.id),
          emoji: text(content.reactionMessage?.text)
        }
      }
    case "protocolMessage": {
      const p = content.protocolMessage
      const target = text(p?.key?.id)
      if (p?.type === proto.Message.ProtocolMessage.Type.REVOKE && target !== "") {
        return { body: { _tag: "revoke", targetProviderMessageId: target } }
      }
      const edited = editedText(p?.editedMessage)
      if (p?.type === proto.Message.ProtocolMessage.Type.MESSAGE_EDIT && target !== "" && edited !== undefined) {
        return { body: { _tag: "edit", targetProviderMessageId: target, body: edited } }
      }
      return { ignored: "protocol" }
    }
    default:
      return { body: { _tag: "unsupported", kind: type } }
  }
}

const protocolKind = (content: proto.IMessage): string => {
  const type = content.protocolMessage?.type
  const name = type === undefined || type === null ? undefined : proto.Message.ProtocolMessage.Type[type]
  return name === undefined ? "protocolMessage" : `protocolMessage.${name}`
}

/** What a message without content stands for, if it is one of the known cases. */
const awaitingKind = (message: WAMessage): MessageContent.AwaitingContentKind | undefined => {
  if (message.key.isViewOnce === true) return "view_once"
  if (message.messageStubType !== proto.WebMessageInfo.StubType.CIPHERTEXT) return undefined
  return message.messageStubParameters?.[0] === NO_MESSAGE_FOUND_ERROR_TEXT ? "placeholder" : "ciphertext"
}

/**
 * One message of a `messages.upsert` batch (`notify` or `append`), translated. `now` (epoch ms)
 * stands in for a missing timestamp.
 */
export const fromBaileys = (message: WAMessage, now: number): Translation => {
  const key = message.key
  const providerMessageId = key.id ?? ""
  const chat = key.remoteJid ?? ""
  const server = decode(chat)?.server ?? chat.slice(chat.indexOf("@") + 1)
  // every wrapper opened (BaileysWrappers): what is left is what the contact sent
  const content = BaileysWrappers.open(message.message).content
  const type = content ? getContentType(content) ?? null : null
  const typeOf = (): MessageContent.MessageType | "none" => {
    if (!content || type === null) return "none"
    const body = bodyOf(message, content, type)
    return "ignored" in body ? "none" : MessageContent.inboundType(body.body)
  }
  const ignored = (reason: IgnoredReason, sender: string | null = chat): Translation => ({
    _tag: "ignored",
    reason,
    type: reason === "no_content" || reason === "protocol" ? "none" : typeOf(),
    providerMessageId,
    kind: type === "protocolMessage" && content ? protocolKind(content) : type,
    sender
  })
  // the chat first: a status post or a group message carries its poster in Alt fields too
  if (chat === "status@broadcast") return ignored("status_broadcast", key.participant ?? null)
  if (server === "broadcast") return ignored("broadcast", key.participant ?? null)
  if (server === "newsletter") return ignored("newsletter")
  if (key.fromMe === true) return ignored("own_message")
  if (providerMessageId === "") return ignored("no_content")
  // in a group, the participant who wrote is the sender
  const group = server === "g.us" ? { whatsappGroupId: decode(chat)?.user ?? chat.split("@")[0]! } : null
  const sender = senderOf(
    group === null ? key : { remoteJid: key.participant ?? null, remoteJidAlt: key.participantAlt }
  )
  const inGroup = group === null ? {} : { groupChat: group }
  const seconds = count(message.messageTimestamp) ?? 0
  const at = seconds > 0 ? seconds * 1000 : now
  if (!content || type === null) {
    const awaiting = awaitingKind(message)
    if (awaiting === undefined) return group ? ignored("group_update", key.participant ?? null) : ignored("no_content")
    if (sender === null) return ignored("no_sender")
    const body = { _tag: "unsupported", kind: awaiting } as const
    return {
      _tag: "content",
      kind: awaiting,
      content: { providerMessageId, sender, body, quotedProviderMessageId: null, at, ...inGroup }
    }
  }
  if (sender === null) return ignored("no_sender")
  const body = bodyOf(message, content, type)
  if ("ignored" in body) return ignored(body.ignored)
  const mentioned = group === null ? [] : BaileysWrappers.mentionedJids(content, type)
  const mentions = mentioned.flatMap((jid) => senderOf({ remoteJid: jid }) ?? [])
  return {
    _tag: "content",
    kind: type === "protocolMessage" ? protocolKind(content) : type,
    ...(body.oddMediaType === true ? { oddMediaType: true as const } : {}),
    content: {
      providerMessageId,
      sender,
      body: body.body,
      quotedProviderMessageId: BaileysWrappers.referredId(content, type, message.message),
      at,
      ...inGroup,
      ...(mentions.length === 0 ? {} : { mentions })
    }
  }
}
