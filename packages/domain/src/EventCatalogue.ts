/** The 31 event types of SPEC 6.3, and whether each is emitted today. */
import { Schema } from "effect"

export const EVENT_TYPES = [
  { type: "message.received", emitted: true },
  { type: "message.queued", emitted: true },
  { type: "message.sent", emitted: true },
  { type: "message.delivered", emitted: true },
  { type: "message.read", emitted: true },
  { type: "message.failed", emitted: true },
  { type: "conversation.created", emitted: true },
  { type: "conversation.assigned", emitted: true },
  { type: "conversation.updated", emitted: true },
  { type: "conversation.closed", emitted: true },
  { type: "conversation.reopened", emitted: true },
  { type: "conversation.note_added", emitted: true },
  { type: "channel.created", emitted: true },
  { type: "channel.connected", emitted: true },
  { type: "channel.disconnected", emitted: true },
  { type: "channel.requires_repair", emitted: true },
  { type: "channel.archived", emitted: true },
  { type: "contact.created", emitted: true },
  { type: "contact.updated", emitted: true },
  { type: "contact.deleted", emitted: true },
  { type: "contact.import_completed", emitted: true },
  { type: "template.created", emitted: true },
  { type: "template.updated", emitted: true },
  { type: "template.archived", emitted: true },
  { type: "campaign.started", emitted: false },
  { type: "campaign.paused", emitted: false },
  { type: "campaign.resumed", emitted: false },
  { type: "campaign.completed", emitted: false },
  { type: "campaign.cancelled", emitted: false },
  { type: "campaign.failed", emitted: false },
  { type: "automation.failed", emitted: false }
] as const

export type EventType = typeof EVENT_TYPES[number]["type"]

export const EventTypeName = Schema.Literal(...EVENT_TYPES.map((e) => e.type)).annotations({
  identifier: "EventType"
})
