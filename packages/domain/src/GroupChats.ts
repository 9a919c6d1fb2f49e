/**
 * Group chats of QR channels (docs/API.md "Group chats"; the sandbox simulates them): what a
 * provider reports of a group the channel's number is in (`ProviderGroupChat`), and the API's
 * records of a group chat and its participants.
 */
import { Schema } from "effect"
import { Id } from "./Ids.js"
import { E164, Timestamp } from "./Schemas.js"

/** A participant's role in a group chat, as WhatsApp names it. */
export const GroupChatRole = Schema.Literal("member", "admin", "superadmin").annotations({
  identifier: "GroupChatRole",
  description:
    "`member`, `admin` (may change the group, and write in an announce-only group) or `superadmin` (its creator)"
})
export type GroupChatRole = typeof GroupChatRole.Type

/** A participant as a provider reports it: a phone number or a LID (at least one), and the role. */
export const ProviderGroupParticipant = Schema.Struct({
  phoneNumber: Schema.NullOr(E164),
  /** WhatsApp's LID without the server part */
  whatsappLid: Schema.NullOr(Schema.String),
  role: GroupChatRole
})
export type ProviderGroupParticipant = typeof ProviderGroupParticipant.Type

/**
 * A group chat as the provider reports it (QR: WhatsApp's group metadata). `participants` are the
 * others (our own number is not among them: `isAdmin` says its role).
 */
export const ProviderGroupChat = Schema.Struct({
  /** WhatsApp's id of the group: the user part of its `...@g.us` jid */
  whatsappGroupId: Schema.String,
  subject: Schema.String,
  description: Schema.NullOr(Schema.String),
  /** only admins may write */
  announceOnly: Schema.Boolean,
  /** our number is an admin (or the creator) */
  isAdmin: Schema.Boolean,
  participants: Schema.Array(ProviderGroupParticipant)
})
export type ProviderGroupChat = typeof ProviderGroupChat.Type

/** The group chat an inbound message was written in. */
export const InboundGroupChat = Schema.Struct({
  /** WhatsApp's id of the group: the user part of its `...@g.us` jid */
  whatsappGroupId: Schema.String
})
export type InboundGroupChat = typeof InboundGroupChat.Type

/**
 * A participant of a group chat (docs/API.md "Group chats"): a contact of the workspace, and its
 * role; `contact_id` null when the contact was deleted (the participant is still in the group).
 */
export const GroupChatParticipant = Schema.Struct({
  contact_id: Schema.NullOr(Id("cnt")).annotations({
    description:
      "The participant's contact; `null` after that contact was deleted (the participant stays, with the number and LID it had, until WhatsApp next reports the group, which makes it a new contact)"
  }),
  phone_number: Schema.NullOr(E164),
  whatsapp_lid: Schema.NullOr(Schema.String).annotations({
    description: "WhatsApp's private id of the participant (LID), when WhatsApp named them by it"
  }),
  role: GroupChatRole
}).annotations({ identifier: "GroupChatParticipant" })
export type GroupChatParticipant = typeof GroupChatParticipant.Type

const groupChatFields = {
  id: Id("gch"),
  object: Schema.Literal("group_chat"),
  channel_id: Id("ch"),
  whatsapp_group_id: Schema.String.annotations({
    description: "WhatsApp's id of the group (the part before `@g.us`); unique per channel"
  }),
  subject: Schema.String.annotations({ description: "The group's name, as its admins set it" }),
  description: Schema.NullOr(Schema.String),
  participant_count: Schema.Number.annotations({ description: "Participants other than the channel's number" }),
  is_admin: Schema.Boolean.annotations({ description: "The channel's number is an admin of the group" }),
  announce_only: Schema.Boolean.annotations({
    description: "Only admins may write: sends are refused unless `is_admin` (409 `group_chat_announce_only`)"
  }),
  is_participant: Schema.Boolean.annotations({
    description:
      "The channel's number is in the group; `false` once it left or was removed (sends are refused: 409 `not_a_participant`; the history stays)"
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}

/** A group chat the channel's number is in (or was in), synced from WhatsApp. */
export class GroupChat extends Schema.Class<GroupChat>("GroupChat")(groupChatFields) {}

/** A group chat with its participants (`GET /v1/group-chats/{id}`). */
export class GroupChatDetail extends Schema.Class<GroupChatDetail>("GroupChatDetail")({
  ...groupChatFields,
  participants: Schema.Array(GroupChatParticipant)
}) {}

/** `120363025246125486` -> `120363025246125486@g.us`: a send's recipient when it goes to a group chat. */
export const groupChatAddress = (whatsappGroupId: string): string => `${whatsappGroupId}@g.us`

/** The WhatsApp group a recipient names (`<id>@g.us`), or `undefined` for a person. */
export const addressedGroupChat = (to: string): string | undefined => {
  const match = /^(\d[\d-]{0,40})@g\.us$/.exec(to)
  return match ? match[1] : undefined
}
