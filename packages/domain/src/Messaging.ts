/**
 * Messages and channels as they appear on the wire. Their state machines are in
 * `MessageStateMachine.ts` and `ChannelStateMachine.ts`, the categories in `MessageCategory.ts`.
 */
import { Schema } from "effect"
import { ChannelStatus } from "./ChannelStateMachine.js"
import { maxCharacters, minCharacters, visibleText } from "./Characters.js"
import { ReactionEmoji } from "./Emoji.js"
import { Id, IdRef } from "./Ids.js"
import { MessageMedia } from "./Media.js"
import { Category } from "./MessageCategory.js"
import { CallStatus, LocationContent, MEDIA_KIND_NAMES, MessageType, SharedContact } from "./MessageContent.js"
import { MessageStatus } from "./MessageStateMachine.js"
import { E164, StrictStruct, Timestamp } from "./Schemas.js"

export const Direction = Schema.Literal("outbound", "inbound")

export const Failure = Schema.Struct({
  class: Schema.Literal("retryable", "permanent"),
  code: Schema.String,
  reason: Schema.String
}).annotations({ identifier: "MessageFailure" })
export type Failure = typeof Failure.Type

export const TimelineEntry = Schema.Struct({
  from_state: Schema.NullOr(MessageStatus),
  to_state: MessageStatus,
  at: Timestamp,
  reason: Schema.NullOr(Schema.String)
}).annotations({ identifier: "TimelineEntry" })

const mediaFields = {
  media_id: Id("med"),
  mime_type: Schema.String,
  /** null until the bytes are stored (`media.status` ready) */
  size_bytes: Schema.NullOr(Schema.Number),
  /** hex SHA-256 of the bytes; null until they are stored */
  sha256: Schema.NullOr(Schema.String),
  caption: Schema.NullOr(Schema.String)
}

/** `image`, `video`, `sticker`: the file (`GET /v1/media/{media_id}/content`) and its caption. */
export const MediaContent = Schema.Struct(mediaFields).annotations({ identifier: "MediaContent" })
export const DocumentContent = Schema.Struct({ ...mediaFields, filename: Schema.NullOr(Schema.String) })
  .annotations({ identifier: "DocumentContent" })
export const AudioContent = Schema.Struct({
  ...mediaFields,
  /** a voice note (recorded in the chat), not an audio file */
  voice: Schema.Boolean
}).annotations({ identifier: "AudioContent" })
export const ReactionContent = Schema.Struct({
  /** the message reacted to (ours or theirs); null when it is not known here */
  message_id: Schema.NullOr(Id("msg")),
  /** "" = the reaction was removed */
  emoji: Schema.String
}).annotations({ identifier: "ReactionContent" })
export const EditContent = Schema.Struct({
  /** the message edited (it keeps its own text); null when it is not known here */
  message_id: Schema.NullOr(Id("msg")),
  text: Schema.Struct({ body: Schema.String })
}).annotations({ identifier: "EditContent" })
export const RevokeContent = Schema.Struct({
  /** the message the sender deleted for everyone (our copy is kept); null when it is not known here */
  message_id: Schema.NullOr(Id("msg"))
}).annotations({ identifier: "RevokeContent" })
export const UnsupportedContent = Schema.Struct({
  /** the provider's own name of the kind, e.g. `pollCreationMessageV3` */
  kind: Schema.String
}).annotations({ identifier: "UnsupportedContent" })

export const CallContent = Schema.Struct({
  video: Schema.Boolean,
  status: CallStatus,
  /** seconds the call lasted, when it was answered elsewhere and its end was heard; else null */
  duration_s: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "CallContent" })

/** The member a message of each non-text type carries (named after its type). */
export const MessageMembers = {
  image: Schema.optional(MediaContent),
  document: Schema.optional(DocumentContent),
  audio: Schema.optional(AudioContent),
  video: Schema.optional(MediaContent),
  sticker: Schema.optional(MediaContent),
  location: Schema.optional(LocationContent),
  contacts: Schema.optional(Schema.Array(SharedContact)),
  reaction: Schema.optional(ReactionContent),
  edit: Schema.optional(EditContent),
  revoke: Schema.optional(RevokeContent),
  call: Schema.optional(CallContent),
  unsupported: Schema.optional(UnsupportedContent)
}
export type MessageMember = Exclude<MessageType, "text" | "template">
export type MessageMemberValue = NonNullable<Schema.Struct.Type<typeof MessageMembers>[MessageMember]>

/** Who sent an inbound message (null on outbound ones): at least one of the two is set. */
export const MessageSender = Schema.Struct({
  phone_number: Schema.NullOr(Schema.String),
  /** WhatsApp's private id of the sender (`LID`), when WhatsApp addressed them by it */
  whatsapp_lid: Schema.NullOr(Schema.String)
}).annotations({ identifier: "MessageSender" })

export const MessageContext = Schema.Struct({
  /** the message this one quotes (ours or theirs); null when it quotes none or one not known here */
  reply_to: Schema.NullOr(Id("msg"))
}).annotations({ identifier: "MessageContext" })

export const MessageFields = {
  id: Id("msg"),
  object: Schema.Literal("message"),
  workspace_id: Id("ws"),
  channel_id: Id("ch"),
  conversation_id: Id("cnv"),
  contact_id: Schema.NullOr(Id("cnt")).annotations({
    description:
      "The contact: the recipient, or the sender of an inbound message (in a group chat, the participant who wrote); null only for a message sent to a group chat (`group_chat_id`)"
  }),
  group_chat_id: Schema.optional(Id("gch")).annotations({
    description: "Only on a message in a group chat (QR; docs/API.md \"Group chats\"): the group chat"
  }),
  mentions: Schema.optional(Schema.Array(Id("cnt"))).annotations({
    description: "Only on an inbound group chat message that mentions participants (`@name`): their contacts"
  }),
  direction: Direction,
  from: Schema.NullOr(Schema.String).annotations({
    description: "The sender's number; null for an inbound message from a sender WhatsApp names only by LID (`sender`)"
  }),
  to: Schema.String,
  type: MessageType,
  text: Schema.Struct({ body: Schema.String }).annotations({
    description:
      "`text` and `template`: the text. Other types keep it for text-only clients: an image, video or document's caption and an edit's new text, otherwise \"\" (docs/API.md \"Messages\")"
  }),
  ...MessageMembers,
  context: MessageContext,
  sender: Schema.NullOr(MessageSender),
  media: Schema.NullOr(MessageMedia).annotations({
    description: "Media types: the stored file's id and status (`pending` until the bytes are stored)"
  }),
  template: Schema.NullOr(
    Schema.Struct({
      id: Id("tpl"),
      slug: Schema.String,
      variables: Schema.Record({ key: Schema.String, value: Schema.String })
    })
  ).annotations({ description: "A template send: the template and the values it was rendered with (`text.body`)" }),
  category: Category,
  status: MessageStatus,
  failure: Schema.NullOr(Failure),
  metadata: Schema.Record({ key: Schema.String, value: Schema.String }),
  created_at: Timestamp,
  updated_at: Timestamp,
  sent_at: Schema.NullOr(Timestamp),
  delivered_at: Schema.NullOr(Timestamp),
  read_at: Schema.NullOr(Timestamp)
}

export class Message extends Schema.Class<Message>("Message")(MessageFields) {}

export class MessageWithTimeline extends Schema.Class<MessageWithTimeline>("MessageWithTimeline")({
  ...MessageFields,
  timeline: Schema.Array(TimelineEntry)
}) {}

const Metadata = Schema.Record({
  key: Schema.String.pipe(maxCharacters(40)),
  value: Schema.String.pipe(maxCharacters(500))
}).pipe(Schema.filter((m) => Object.keys(m).length <= 20 || "Expected at most 20 metadata pairs"))

const caption = Schema.String.pipe(maxCharacters(1024))

/** A file to send: a media uploaded with `POST /v1/media`, or a URL fetched once when the send is accepted. */
const mediaSource = {
  media_id: Schema.optional(IdRef("med")),
  url: Schema.optional(
    Schema.String.pipe(maxCharacters(2048))
  ).annotations({
    description:
      "https URL of the file, fetched once when the send is accepted, through the same egress policy as webhooks (docs/API.md \"Media\")"
  })
}

const oneSource = <A extends { readonly media_id?: unknown; readonly url?: unknown }>(file: A) =>
  (file.media_id === undefined) !== (file.url === undefined) || "Send exactly one of media_id and url"

const SendMedia = StrictStruct({ ...mediaSource, caption: Schema.optional(caption) }).pipe(Schema.filter(oneSource))
  .annotations({ identifier: "SendMedia" })
const SendDocument = StrictStruct({
  ...mediaSource,
  caption: Schema.optional(caption),
  filename: Schema.optional(Schema.String.pipe(minCharacters(1), maxCharacters(255)))
}).pipe(Schema.filter(oneSource)).annotations({ identifier: "SendDocument" })
const SendAudio = StrictStruct({
  ...mediaSource,
  /** a voice note (push-to-talk) rather than an audio file */
  voice: Schema.optional(Schema.Boolean.annotations({
    description:
      "A voice note (push-to-talk) rather than an audio file; only an Ogg Opus file can be one (`audio/ogg; codecs=opus`), any other audio is 422 `details.reason = voice_note_type_unsupported`"
  }))
}).pipe(Schema.filter(oneSource)).annotations({ identifier: "SendAudio" })
const SendSticker = StrictStruct(mediaSource).pipe(Schema.filter(oneSource)).annotations({ identifier: "SendSticker" })

const SendLocation = StrictStruct({
  latitude: Schema.Number.pipe(Schema.between(-90, 90)),
  longitude: Schema.Number.pipe(Schema.between(-180, 180)),
  name: Schema.optional(Schema.String.pipe(maxCharacters(1000))),
  address: Schema.optional(Schema.String.pipe(maxCharacters(1000)))
}).annotations({ identifier: "SendLocation" })

const SendReaction = StrictStruct({
  /** a message of the same conversation (ours or theirs) */
  message_id: Id("msg"),
  /** one emoji; "" removes the reaction */
  emoji: ReactionEmoji
}).annotations({ identifier: "SendReaction" })

/** The kinds a send can carry: exactly one per request (docs/API.md "Messages"). */
export const SEND_KINDS = ["text", "template", ...MEDIA_KIND_NAMES, "location", "reaction"] as const
export type SendKind = typeof SEND_KINDS[number]

/**
 * A text message's body, whatever the door (a send, a conversation's reply, a simulated inbound
 * text or edit): 1 to 4 096 characters, at least one of them visible (docs/API.md "Messages").
 */
export const TextBody = Schema.String.pipe(
  minCharacters(1, "Expected a non-empty text body"),
  maxCharacters(4096, "Expected at most 4096 characters"),
  visibleText()
).annotations({
  description:
    "1 to 4096 characters, at least one of them visible: not only whitespace, zero-width or other invisible characters"
})

/** The fields every send (and conversation reply) takes, `to` and `channel_id` aside. */
export const sendFields = {
  text: Schema.optional(StrictStruct({ body: TextBody })),
  template: Schema.optional(StrictStruct({
    slug: Schema.String.pipe(Schema.pattern(/^[a-z0-9_]{1,64}$/, { message: () => "Expected a template slug" })),
    variables: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
  })),
  image: Schema.optional(SendMedia),
  document: Schema.optional(SendDocument),
  audio: Schema.optional(SendAudio),
  video: Schema.optional(SendMedia),
  sticker: Schema.optional(SendSticker),
  location: Schema.optional(SendLocation),
  reaction: Schema.optional(SendReaction),
  reply_to: Schema.optional(Id("msg")).annotations({
    description: "Quotes a message of the same conversation (ours or theirs)"
  }),
  category: Schema.optional(Category),
  metadata: Schema.optional(Metadata)
}

/** The one kind a send carries, or the refusal's message. */
export const exactlyOneKind = (body: { readonly [K in SendKind]?: unknown }) => {
  const given = SEND_KINDS.filter((kind) => body[kind] !== undefined)
  return given.length === 1 || {
    path: [given[1] ?? "text"],
    message: `Send exactly one of ${SEND_KINDS.join(", ")}`
  }
}

/** The kind of a decoded send body. */
export const sendKind = (body: { readonly [K in SendKind]?: unknown }): SendKind =>
  SEND_KINDS.find((kind) => body[kind] !== undefined) ?? "text"

/** Exactly one recipient: a number (`to`) or a group chat (`group_chat_id`). */
export const exactlyOneRecipient = (body: { readonly to?: unknown; readonly group_chat_id?: unknown }) =>
  (body.to === undefined) !== (body.group_chat_id === undefined) || {
    path: [body.to === undefined ? "to" : "group_chat_id"],
    message: "Send exactly one of to and group_chat_id"
  }

/** The send body's members (`SendMessageRequest` without its checks). */
export const SendMessageMembers = StrictStruct({
  to: Schema.optional(E164).annotations({
    description: "The recipient's number (E.164); exactly one of `to` and `group_chat_id`"
  }),
  group_chat_id: Schema.optional(IdRef("gch")).annotations({
    description:
      "A group chat of a QR channel (docs/API.md \"Group chats\") instead of `to`; `channel_id` may be left out (the group chat's channel)"
  }),
  channel_id: Schema.optional(IdRef("ch")),
  ...sendFields
})

export const SendMessageRequest = SendMessageMembers.pipe(
  Schema.filter(exactlyOneRecipient),
  Schema.filter(exactlyOneKind)
).annotations({ identifier: "SendMessageRequest" })

export const Provider = Schema.Literal("sandbox", "qr", "cloud").annotations({ identifier: "Provider" })
export type Provider = typeof Provider.Type

/**
 * What a QR channel does with incoming calls (docs/QR-CHANNELS.md "Calls"): `reject` rejects
 * each call at once; `reply_text`, if set, is then sent to the caller as a normal outbound text.
 */
export const CallPolicy = Schema.Struct({
  reject: Schema.Boolean,
  reply_text: Schema.NullOr(Schema.String)
}).annotations({ identifier: "CallPolicy" })
export type CallPolicy = typeof CallPolicy.Type

/** A channel's call policy until one is set: calls ring on, and are recorded. */
export const DEFAULT_CALL_POLICY: CallPolicy = { reject: false, reply_text: null }

export class Channel extends Schema.Class<Channel>("Channel")({
  id: Id("ch"),
  object: Schema.Literal("channel"),
  workspace_id: Id("ws"),
  name: Schema.String,
  provider: Provider,
  status: ChannelStatus,
  status_reason: Schema.NullOr(Schema.String),
  is_default: Schema.Boolean,
  phone_number: Schema.NullOr(Schema.String),
  call_policy: CallPolicy,
  created_at: Timestamp,
  updated_at: Timestamp,
  archived_at: Schema.NullOr(Timestamp)
}) {}

export class Capabilities extends Schema.Class<Capabilities>("Capabilities")({
  channel_id: Id("ch"),
  provider: Provider,
  max_throughput_mps: Schema.Number,
  message_types: Schema.Array(Schema.String),
  refreshed_at: Timestamp
}) {}

/**
 * What each provider can send (`message_types` of its capabilities): the sandbox simulates every
 * kind; a linked device (QR) sends every kind too, files through WhatsApp's media host
 * (docs/QR-CHANNELS.md, "What a QR channel sends"); the Cloud API has no adapter.
 */
export const MESSAGE_TYPES: Record<Provider, ReadonlyArray<string>> = {
  sandbox: ["text", "image", "document", "audio", "video", "sticker", "location", "reaction"],
  qr: ["text", "image", "document", "audio", "video", "sticker", "location", "reaction"],
  cloud: []
}

/** Provider throughput. */
export const THROUGHPUT_MPS: Record<Provider, number> = { sandbox: 2, qr: 0.5, cloud: 0 }
