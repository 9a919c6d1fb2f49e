/**
 * The registry of emitters: the event types some code path emits today, which
 * `GET /v1/webhook-event-types` reports as `emitted: true`. Whoever adds a path that emits a new
 * type adds ONE line here; `test/eventEmitters.test.ts` fails when a type listed here is emitted by
 * no tested path, or a tested path emits a type missing here.
 */
import type { EventType } from "./EventCatalogue.js"

export const EMITTED_EVENT_TYPES: ReadonlySet<EventType> = new Set<EventType>([
  "message.received", // entities InboundMessages
  "message.queued", // MessagesRepo (send)
  "message.sent", // MessagesRepo transitions (messageStatusEvent)
  "message.delivered",
  "message.read",
  "message.failed",
  "conversation.created", // ConversationsRepo (first message of a contact on a channel)
  "conversation.assigned", // service-api Conversations (PATCH)
  "conversation.updated",
  "conversation.closed",
  "conversation.reopened", // Conversations (PATCH) and ConversationsRepo (a message reopens it)
  "conversation.note_added",
  "channel.created", // Channels.insert
  "channel.connected", // channelMoveDomainEvents (ChannelsRepo, Channels)
  "channel.disconnected",
  "channel.requires_repair",
  "channel.archived",
  "contact.created", // ContactsRepo.upsertContact (domain contactCreatedEvent), service-api Contacts
  "contact.updated", // service-api Contacts (PATCH)
  "contact.deleted", // service-api Contacts (DELETE)
  "contact.import_completed", // entities ContactImportWorker (one per import, with the counts)
  "template.created", // service-api Templates
  "template.updated",
  "template.archived"
])

/** Whether some code path emits `type` today. */
export const isEmitted = (type: EventType): boolean => EMITTED_EVENT_TYPES.has(type)
