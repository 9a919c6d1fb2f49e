/**
 * Conversations and their notes as they appear on the wire (docs/API.md "Conversations"). Which
 * events their changes report is in `ConversationStateMachine.ts`.
 */
import { Schema } from "effect"
import { maxCharacters, minCharacters } from "./Characters.js"
import { ConversationStatus } from "./ConversationStateMachine.js"
import { Id } from "./Ids.js"
import { exactlyOneKind, Message, SendMessageMembers } from "./Messaging.js"
import { StrictStruct, Timestamp } from "./Schemas.js"

/** The contact behind a conversation, inline. */
export const ConversationContact = Schema.Struct({
  id: Id("cnt"),
  object: Schema.Literal("contact"),
  phone_number: Schema.NullOr(Schema.String).annotations({
    description: "null only for a sender WhatsApp named by LID alone (`whatsapp_lid`), until it reveals the number"
  }),
  whatsapp_lid: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ConversationContact" })

export class Conversation extends Schema.Class<Conversation>("Conversation")({
  id: Id("cnv"),
  object: Schema.Literal("conversation"),
  workspace_id: Id("ws"),
  channel_id: Id("ch"),
  contact_id: Schema.NullOr(Id("cnt")).annotations({
    description: "The contact; null only for a group chat's conversation (`group_chat_id`)"
  }),
  group_chat_id: Schema.optional(Id("gch")).annotations({
    description:
      "Only on a group chat's conversation (QR; docs/API.md \"Group chats\"): the group chat, whose participants write in it"
  }),
  contact: Schema.NullOr(ConversationContact).annotations({
    description:
      "The contact inline; null once the contact was deleted (`contact_id` stays, history is kept), and for a group chat's conversation"
  }),
  status: ConversationStatus,
  assignee_id: Schema.NullOr(Id("usr")),
  last_message_at: Schema.NullOr(Timestamp),
  last_message: Schema.NullOr(Message).annotations({
    description:
      "The newest message of the thread, either direction, as `GET /v1/messages/{id}` shows it without its timeline (an inbox's preview line); null before the first one"
  }),
  last_inbound_at: Schema.NullOr(Timestamp.annotations({ description: "When the contact last wrote" })),
  last_read_at: Schema.NullOr(
    Timestamp.annotations({ description: "The read marker: the newest inbound message read (`POST /{id}/read`)" })
  ),
  unread_count: Schema.Number.annotations({
    description: "Inbound messages created after `last_read_at` (all inbound ones while it is null)"
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const NoteAuthor = Schema.Struct({
  type: Schema.Literal("user", "api_key"),
  id: Schema.String.annotations({ description: "The user's id (`usr_`) or the API key's id (`key_`)" })
}).annotations({ identifier: "NoteAuthor" })

export class ConversationNote extends Schema.Class<ConversationNote>("ConversationNote")({
  id: Id("nte"),
  object: Schema.Literal("conversation_note"),
  conversation_id: Id("cnv"),
  body: Schema.String,
  author: NoteAuthor,
  created_at: Timestamp
}) {}

export const UpdateConversationRequest = StrictStruct({
  status: Schema.optional(ConversationStatus),
  assignee_id: Schema.optional(Schema.NullOr(Id("usr")))
}).pipe(
  Schema.filter((b) =>
    b.status !== undefined || b.assignee_id !== undefined || "Send at least one of status and assignee_id"
  )
).annotations({ identifier: "UpdateConversationRequest" })

export const CreateNoteRequest = StrictStruct({
  body: Schema.String.pipe(
    minCharacters(1, "Expected a non-empty note"),
    maxCharacters(4096, "Expected at most 4096 characters")
  )
}).annotations({ identifier: "CreateNoteRequest" })

// the send body without `to`, `group_chat_id` and `channel_id`: the conversation names them
const { channel_id: _channelId, group_chat_id: _groupChatId, to: _to, ...replyFields } = SendMessageMembers.fields

export const ReplyRequest = StrictStruct(replyFields).pipe(Schema.filter(exactlyOneKind)).annotations({
  identifier: "ReplyRequest"
})

/** The members every conversation event's `data` starts with, from the conversation after the change. */
export const conversationEventFields = (c: {
  readonly id: Conversation["id"]
  readonly channel_id: Conversation["channel_id"]
  readonly contact_id: Conversation["contact_id"]
  readonly group_chat_id?: Conversation["group_chat_id"]
  readonly status: Conversation["status"]
}) => ({
  object: "conversation" as const,
  object_id: c.id,
  conversation_id: c.id,
  channel_id: c.channel_id,
  contact_id: c.contact_id,
  ...(c.group_chat_id === undefined ? {} : { group_chat_id: c.group_chat_id }),
  status: c.status
})
