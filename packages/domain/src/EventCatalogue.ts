/**
 * The 31 event types of the catalogue (all subscribable). Which of them some code path emits
 * today is `EMITTED_EVENT_TYPES` (`EmittedEvents.ts`), kept beside the emitters.
 */
import { Schema } from "effect"

export const EVENT_TYPES = [
  { type: "message.received" },
  { type: "message.queued" },
  { type: "message.sent" },
  { type: "message.delivered" },
  { type: "message.read" },
  { type: "message.failed" },
  { type: "conversation.created" },
  { type: "conversation.assigned" },
  { type: "conversation.updated" },
  { type: "conversation.closed" },
  { type: "conversation.reopened" },
  { type: "conversation.note_added" },
  { type: "channel.created" },
  { type: "channel.connected" },
  { type: "channel.disconnected" },
  { type: "channel.requires_repair" },
  { type: "channel.archived" },
  { type: "contact.created" },
  { type: "contact.updated" },
  { type: "contact.deleted" },
  { type: "contact.import_completed" },
  { type: "template.created" },
  { type: "template.updated" },
  { type: "template.archived" },
  { type: "campaign.started" },
  { type: "campaign.paused" },
  { type: "campaign.resumed" },
  { type: "campaign.completed" },
  { type: "campaign.cancelled" },
  { type: "campaign.failed" },
  { type: "automation.failed" }
] as const

export type EventType = typeof EVENT_TYPES[number]["type"]

export const EventTypeName = Schema.Literal(...EVENT_TYPES.map((e) => e.type)).annotations({
  identifier: "EventType"
})
