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
