/**
 * The kinds of message real WhatsApp traffic carries (docs/API.md "Messages", "Media"): the `type` of a message, the member named after it on the message record,
 * and the provider-neutral form in which a provider reports an inbound message before its media
 * are stored (`InboundContent`). Providers (QR/Baileys, sandbox) translate what they hear into
 * `InboundContent`; `InboundMessages` records it. Nothing a provider hears is dropped unseen: what
 * no kind models becomes `unsupported` with the provider's own name of the kind.
 */
import { Schema } from "effect"
import { InboundGroupChat } from "./GroupChats.js"
import { E164 } from "./Schemas.js"

/** The kinds whose content is a stored file, by name (`MediaKind`). */
export const MEDIA_KIND_NAMES = ["image", "document", "audio", "video", "sticker"] as const

/** Every `type` a message can have. `text` and `template` are the kinds outbound sends have. */
export const MessageType = Schema.Literal(
  "text",
  "template",
  ...MEDIA_KIND_NAMES,
  "location",
  "contacts",
  "reaction",
  "edit",
  "revoke",
  "call",
  "unsupported"
).annotations({ identifier: "MessageType" })
export type MessageType = typeof MessageType.Type

/** The kinds whose content is a stored file. */
export const MediaKind = Schema.Literal(...MEDIA_KIND_NAMES).annotations({
  identifier: "MediaKind"
})
export type MediaKind = typeof MediaKind.Type

export const MEDIA_KINDS: ReadonlyArray<MediaKind> = MediaKind.literals

export { MEDIA_LIMIT_BYTES, MEDIA_TYPES } from "./MediaKinds.js"

export const LocationContent = Schema.Struct({
  latitude: Schema.Number,
  longitude: Schema.Number,
  name: Schema.NullOr(Schema.String),
  address: Schema.NullOr(Schema.String)
}).annotations({ identifier: "LocationContent" })
export type LocationContent = typeof LocationContent.Type

export const SharedContact = Schema.Struct({
  name: Schema.String,
  /** E.164 where the card had a number WhatsApp could resolve, otherwise as given */
  phones: Schema.Array(Schema.String)
}).annotations({ identifier: "SharedContact" })
export type SharedContact = typeof SharedContact.Type

/**
 * Who sent an inbound message. WhatsApp addresses some senders only by their LID (a private id,
 * `...@lid`) until it reveals the phone number; at least one of the two is set.
 */
export const InboundSender = Schema.Struct({
  phoneNumber: Schema.NullOr(E164),
  /** WhatsApp's LID without the server part, e.g. `123456789012345` */
  whatsappLid: Schema.NullOr(Schema.String)
})
export type InboundSender = typeof InboundSender.Type

/**
 * An inbound file as the provider reported it, before its bytes are stored. `source` is the
 * provider's own, JSON-serialisable handle from which it can download the bytes later (for
 * Baileys: the message itself, so a re-upload can be requested when the media host answers
 * 404/410); it is stored with the durable download job and never shown to a client.
 */
export const InboundMedia = Schema.TaggedStruct("media", {
  kind: MediaKind,
  mimeType: Schema.String,
  caption: Schema.NullOr(Schema.String),
  /** documents only */
  filename: Schema.NullOr(Schema.String),
  /** audio only: a voice note (push-to-talk) */
  voice: Schema.Boolean,
  /** as the provider announced them (checked once the bytes are in) */
  sizeBytes: Schema.NullOr(Schema.Number),
  sha256: Schema.NullOr(Schema.String),
  source: Schema.Unknown
})

/**
 * How an incoming call ended for the business (docs/QR-CHANNELS.md "Calls"): nobody answered
 * (`missed`), rejected (by the call policy or on the phone), or answered on another of the
 * number's devices (`answered_elsewhere`).
 */
export const CallStatus = Schema.Literal("missed", "rejected", "answered_elsewhere").annotations({
  identifier: "CallStatus"
})
export type CallStatus = typeof CallStatus.Type

/** What a provider reports of an inbound message's content. */
export const InboundBody = Schema.Union(
  Schema.TaggedStruct("text", { body: Schema.String }),
  InboundMedia,
  Schema.TaggedStruct("location", LocationContent.fields),
  Schema.TaggedStruct("contacts", { contacts: Schema.Array(SharedContact) }),
  /** `targetProviderMessageId`: the provider's id of the message reacted to; emoji "" = removed */
  Schema.TaggedStruct("reaction", { targetProviderMessageId: Schema.String, emoji: Schema.String }),
  Schema.TaggedStruct("edit", { targetProviderMessageId: Schema.String, body: Schema.String }),
  Schema.TaggedStruct("revoke", { targetProviderMessageId: Schema.String }),
  /** an incoming voice or video call, once its outcome is known; `durationS` when it was answered */
  Schema.TaggedStruct("call", { video: Schema.Boolean, status: CallStatus, durationS: Schema.NullOr(Schema.Number) }),
  /** what no kind models, with the provider's own name of it (e.g. `pollCreationMessageV3`) */
  Schema.TaggedStruct("unsupported", { kind: Schema.String })
)
export type InboundBody = typeof InboundBody.Type

/** One inbound message as a provider reports it (QR connection, sandbox). */
export const InboundContent = Schema.Struct({
  /** the provider's id of the message (deduplication key per channel) */
  providerMessageId: Schema.String,
  sender: InboundSender,
  body: InboundBody,
  /** the provider's id of the message this one quotes, if any */
  quotedProviderMessageId: Schema.NullOr(Schema.String),
  /** epoch ms */
  at: Schema.Number,
  /**
   * the group chat it was written in (QR; `sender` is the participant who wrote); absent or `null`
   * for a direct message. Optional, so what a node that predates group chats reported still decodes.
   */
  groupChat: Schema.optional(Schema.NullOr(InboundGroupChat)),
  /** the participants a group message mentions (`@name`), as the provider named them */
  mentions: Schema.optional(Schema.Array(InboundSender))
})
export type InboundContent = typeof InboundContent.Type

/**
 * `unsupported` kinds of a message whose content has not reached the linked device (docs/QR-CHANNELS.md
 * "Messages without content"): a view-once marker (`view_once`: the content stays on the phone), a
 * message WhatsApp delivered without content, the phone asked to send it (`placeholder`), one the
 * device could not decrypt, the sender asked to send it again (`ciphertext`). Each is recorded at
 * once; when the content arrives under the same provider id, the message is completed in place.
 */
export const AWAITING_CONTENT_KINDS = ["view_once", "placeholder", "ciphertext"] as const
export type AwaitingContentKind = typeof AWAITING_CONTENT_KINDS[number]

/** Whether a body stands for content not here (yet): one of `AWAITING_CONTENT_KINDS`. */
export const awaitsContent = (body: InboundBody): boolean =>
  body._tag === "unsupported" && (AWAITING_CONTENT_KINDS as ReadonlyArray<string>).includes(body.kind)

/** The message `type` an inbound body is recorded as. */
export const inboundType = (body: InboundBody): MessageType => body._tag === "media" ? body.kind : body._tag

/** A message named by the provider's id: whether it is ours (`fromMe`) and its text (for a quote's preview). */
export interface ProviderMessageRef {
  readonly providerMessageId: string
  readonly fromMe: boolean
  readonly body: string
  /**
   * a group chat's message another participant wrote: its author, by phone number (E.164) or LID
   * address (`<lid>@lid`), as WhatsApp keys a group message by chat and author
   */
  readonly participant?: string | null | undefined
}

/**
 * What a send hands the provider, provider-neutral: a text (the message's body), a stored file
 * (the provider streams it from the media store), a location, or a reaction to a message known
 * by its provider id.
 */
export type OutgoingBody =
  | { readonly _tag: "text" }
  | {
    readonly _tag: "media"
    readonly kind: MediaKind
    readonly mediaId: string
    readonly mimeType: string
    readonly sizeBytes: number
    readonly caption: string | null
    readonly filename: string | null
    readonly voice: boolean
  }
  | ({ readonly _tag: "location" } & LocationContent)
  | { readonly _tag: "reaction"; readonly target: ProviderMessageRef; readonly emoji: string }
