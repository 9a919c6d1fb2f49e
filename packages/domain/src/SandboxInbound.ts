/**
 * `POST /v1/sandbox/sessions/{id}/inbound` (docs/API.md "Messages"): what the simulated network delivers
 * to the session's number, of every kind a real provider reports (docs/API.md "Messages"): exactly one
 * of the kind members, optionally quoting a message of the session's channel (`reply_to`).
 */
import { Schema } from "effect"
import { maxCharacters, minCharacters } from "./Characters.js"
import { ReactionEmoji } from "./Emoji.js"
import { Id } from "./Ids.js"
import { MessageType } from "./MessageContent.js"
import { TextBody } from "./Messaging.js"
import { E164, StrictStruct } from "./Schemas.js"

/** The largest file given inline (`data_base64`, decoded). */
export const SANDBOX_INLINE_MEDIA_BYTES = 1024 * 1024

const Caption = Schema.String.pipe(maxCharacters(1024))

/** Where a file comes from; no caption (an audio's or a sticker's: WhatsApp's have none, as on a send). */
const fileFields = {
  media_id: Schema.optional(Id("med")).annotations({ description: "A stored media of the workspace" }),
  data_base64: Schema.optional(Schema.String).annotations({
    description: "The file itself, base64 (at most 1 MiB decoded); with `mime_type`"
  }),
  mime_type: Schema.optional(
    Schema.String.pipe(maxCharacters(255)).annotations({
      description:
        "The file's media type, as RFC 9110 writes it (`audio/ogg; codecs=opus`); a control character or a parameter that is not `name=value` is 422 `media_type_invalid`"
    })
  )
}

/** A file with its caption: an image, a video or a document. */
const mediaFields = { ...fileFields, caption: Schema.optional(Caption) }

const oneSource = <A extends { readonly media_id?: string | undefined; readonly data_base64?: string | undefined }>(
  m: A & { readonly mime_type?: string | undefined }
) =>
  (m.media_id === undefined) === (m.data_base64 === undefined)
    ? { path: ["media_id"], message: "Give exactly one of media_id and data_base64" }
    : m.data_base64 !== undefined && (m.mime_type === undefined || m.mime_type.trim() === "")
    ? { path: ["mime_type"], message: "data_base64 needs its mime_type" }
    : true

export const SandboxMediaInput = StrictStruct(mediaFields).pipe(Schema.filter(oneSource))
  .annotations({ identifier: "SandboxMediaInput" })
export const SandboxDocumentInput = StrictStruct({
  ...mediaFields,
  filename: Schema.optional(Schema.String.pipe(minCharacters(1), maxCharacters(255)))
}).pipe(Schema.filter(oneSource)).annotations({ identifier: "SandboxDocumentInput" })
export const SandboxAudioInput = StrictStruct({
  ...fileFields,
  voice: Schema.optional(Schema.Boolean).annotations({
    description:
      "A voice note (default false); only an Ogg Opus file can be one, any other audio is 422 `details.reason = voice_note_type_unsupported`"
  })
}).pipe(Schema.filter(oneSource)).annotations({ identifier: "SandboxAudioInput" })
export const SandboxStickerInput = StrictStruct(fileFields).pipe(Schema.filter(oneSource))
  .annotations({ identifier: "SandboxStickerInput" })

const ShortText = Schema.String.pipe(maxCharacters(1024))

/** The kind members; exactly one is given: every message type but `template` (a send-only kind). */
/** Every inbound kind but calls (a linked device's, docs/QR-CHANNELS.md "Calls"). */
export const SANDBOX_INBOUND_KINDS = MessageType.literals.filter(
  (type): type is Exclude<MessageType, "template" | "call"> => type !== "template" && type !== "call"
)

export const SandboxInboundRequest = StrictStruct({
  from: E164,
  group_chat_id: Schema.optional(Id("gch")).annotations({
    description:
      "A simulated group chat of the session (`POST /v1/sandbox/sessions/{id}/group-chats`): `from`, one of its participants, writes in it"
  }),
  mentions: Schema.optional(Schema.Array(E164).pipe(Schema.maxItems(50))).annotations({
    description: "With `group_chat_id`: the participants the message mentions (`@name`)"
  }),
  reply_to: Schema.optional(Id("msg")).annotations({ description: "A message of the session's channel it quotes" }),
  text: Schema.optional(StrictStruct({ body: TextBody })),
  image: Schema.optional(SandboxMediaInput),
  document: Schema.optional(SandboxDocumentInput),
  audio: Schema.optional(SandboxAudioInput),
  video: Schema.optional(SandboxMediaInput),
  sticker: Schema.optional(SandboxStickerInput),
  location: Schema.optional(StrictStruct({
    latitude: Schema.Number.pipe(Schema.between(-90, 90)),
    longitude: Schema.Number.pipe(Schema.between(-180, 180)),
    name: Schema.optional(ShortText),
    address: Schema.optional(ShortText)
  })),
  contacts: Schema.optional(
    Schema.Array(StrictStruct({
      name: ShortText,
      phones: Schema.Array(Schema.String.pipe(maxCharacters(32))).pipe(Schema.maxItems(20))
    })).pipe(Schema.minItems(1), Schema.maxItems(20))
  ),
  reaction: Schema.optional(StrictStruct({
    message_id: Id("msg"),
    emoji: ReactionEmoji
  })),
  edit: Schema.optional(StrictStruct({ message_id: Id("msg"), text: StrictStruct({ body: TextBody }) })),
  revoke: Schema.optional(StrictStruct({ message_id: Id("msg") })),
  unsupported: Schema.optional(StrictStruct({ kind: Schema.String.pipe(minCharacters(1), maxCharacters(64)) }))
}).pipe(
  Schema.filter((body) =>
    SANDBOX_INBOUND_KINDS.filter((k) => body[k] !== undefined).length === 1 ||
    { path: ["text"], message: `Give exactly one of ${SANDBOX_INBOUND_KINDS.join(", ")}` }
  ),
  Schema.filter((body) =>
    body.mentions === undefined || body.group_chat_id !== undefined ||
    { path: ["mentions"], message: "Only a message in a group chat (group_chat_id) mentions participants" }
  )
).annotations({ identifier: "SandboxInboundRequest" })

/**
 * `POST /v1/sandbox/sessions/{id}/group-chats`: a simulated group chat the session's number is in,
 * with verified recipients (or magic numbers) as its other participants (docs/API.md "Group chats").
 */
export const SandboxGroupChatRequest = StrictStruct({
  subject: Schema.String.pipe(minCharacters(1), maxCharacters(100)),
  description: Schema.optional(Schema.String.pipe(maxCharacters(2048))),
  participants: Schema.Array(E164).pipe(Schema.minItems(1), Schema.maxItems(50)).annotations({
    description: "The other participants: verified recipients of the session (or magic numbers)"
  }),
  admins: Schema.optional(Schema.Array(E164).pipe(Schema.maxItems(50))).annotations({
    description: "Participants who are admins (the first participant is the group's creator, `superadmin`)"
  }),
  announce_only: Schema.optional(Schema.Boolean).annotations({ description: "Only admins may write (default false)" }),
  is_admin: Schema.optional(Schema.Boolean).annotations({
    description: "The session's number is an admin (default false)"
  })
}).annotations({ identifier: "SandboxGroupChatRequest" })
export type SandboxGroupChatRequest = typeof SandboxGroupChatRequest.Type
export type SandboxInboundRequest = typeof SandboxInboundRequest.Type
