/**
 * Which events a message brings beside its own, decided here (pure) and written by whichever
 * statement stores the message (`SendWritesRepo` for a send, `ContactsRepo.upsertContact` and
 * `ConversationsRepo.upsertConversation` for an inbound message): `contact.created` when it created
 * its contact, `conversation.created` or `conversation.reopened` (the rule: `messageArrival`).
 */
import type { Contact } from "./Contacts.js"
import { conversationEventFields } from "./Conversations.js"
import type { Conversation } from "./Conversations.js"
import { messageArrival } from "./ConversationStateMachine.js"
import type { ConversationStatus } from "./ConversationStateMachine.js"
import { DomainEvent } from "./Events.js"

/** `contact.created` of a contact a message created. */
export const contactCreatedEvent = (id: Contact["id"]) =>
  DomainEvent.make("contact.created", { object: "contact", object_id: id, contact_id: id })

/**
 * The event a message brings to its conversation, for a conversation whose status before the
 * message was `prior` (`null`: the message created it); none when it was open.
 */
export const arrivalEvent = (
  prior: ConversationStatus | null,
  direction: "outbound" | "inbound",
  conversation: {
    readonly id: Conversation["id"]
    readonly channelId: Conversation["channel_id"]
    readonly contactId: Conversation["contact_id"]
    /** a group chat's conversation */
    readonly groupChatId?: Conversation["group_chat_id"]
  }
): DomainEvent | undefined => {
  const arrival = messageArrival(prior, direction)
  if (arrival === undefined) return undefined
  const fields = conversationEventFields({
    id: conversation.id,
    channel_id: conversation.channelId,
    contact_id: conversation.contactId,
    group_chat_id: conversation.groupChatId,
    status: "open"
  })
  return arrival.type === "conversation.created"
    ? DomainEvent.make("conversation.created", fields)
    : DomainEvent.make("conversation.reopened", { ...fields, reason: arrival.reason })
}
