/**
 * The `data` of every event type of the catalogue (`EventCatalogue.ts`) as a schema, and
 * `DomainEvent`, the only way to build an event: `DomainEvent.make(type, data)` checks `data`
 * against `type` at compile time, and `EventsRepo.append` accepts nothing else. The webhook
 * event types of `@switchboard/sdk` are derived from these schemas.
 *
 * Every `data` is `{object, object_id}` plus the resource's own id member and its status; channel
 * status changes add `from_status`, `to_status`, `reason`. Members appear in
 * the order declared here, which is the order stored and delivered. Which types some path emits
 * today is `EMITTED_EVENT_TYPES` (`EmittedEvents.ts`, checked by test/eventEmitters.test.ts):
 * every type but the campaign events and `automation.failed`, which have their shape here so the
 * features that emit them fill it in. Conversation events carry the
 * conversation's channel and contact; which change reports which is `ConversationStateMachine.ts`.
 */
import { Schema } from "effect"
import { ChannelStatus, ChannelStatusReason } from "./ChannelStateMachine.js"
import type { ChannelMove } from "./ChannelStateMachine.js"
import { channelMoveEvents } from "./ChannelStateMachine.js"
import { ConversationStatus, ReopenReason } from "./ConversationStateMachine.js"
import { EVENT_TYPES } from "./EventCatalogue.js"
import type { EventType } from "./EventCatalogue.js"
import { Id } from "./Ids.js"
import { Category } from "./MessageCategory.js"
import { MessageType } from "./MessageContent.js"
import { MessageStatus, STATUS_EVENT } from "./MessageStateMachine.js"
import { Failure } from "./Messaging.js"
import type { Message } from "./Messaging.js"

/** `message.queued`, `.sent`, `.delivered`, `.read`, `.failed` (failure members on `.failed` only). */
export const MessageStatusChangedData = Schema.Struct({
  object: Schema.Literal("message"),
  object_id: Id("msg"),
  message_id: Id("msg"),
  from_state: Schema.NullOr(MessageStatus),
  to_state: MessageStatus,
  category: Category,
  failure_class: Schema.optional(Failure.fields.class),
  error_code: Schema.optional(Schema.String),
  reason: Schema.optional(Schema.String),
  /** `message.queued` of a template send only: the template it rendered */
  template: Schema.optional(Schema.Struct({ id: Id("tpl"), slug: Schema.String })),
  /** `message.queued` of a template send only: the rendered text */
  body: Schema.optional(Schema.String)
}).annotations({ identifier: "MessageStatusChangedData" })

export const MessageReceivedData = Schema.Struct({
  object: Schema.Literal("message"),
  object_id: Id("msg"),
  message_id: Id("msg"),
  conversation_id: Id("cnv"),
  contact_id: Id("cnt"),
  channel_id: Id("ch"),
  /** a message in a group chat only (`contact_id`: the participant who wrote) */
  group_chat_id: Schema.optional(Id("gch")),
  direction: Schema.Literal("inbound"),
  /** the message's kind (docs/API.md "Messages") */
  type: MessageType,
  /**
   * file types only: `ready` (the bytes are stored: `GET /v1/media/{id}/content`) or `failed`
   * (they could not be fetched; the message's `media.failure_reason` says why)
   */
  media_status: Schema.optional(Schema.Literal("ready", "failed"))
}).annotations({ identifier: "MessageReceivedData" })

const conversationFields = {
  object: Schema.Literal("conversation"),
  object_id: Id("cnv"),
  conversation_id: Id("cnv"),
  channel_id: Id("ch"),
  /** null for a group chat's conversation */
  contact_id: Schema.NullOr(Id("cnt")),
  /** a group chat's conversation only */
  group_chat_id: Schema.optional(Id("gch")),
  /** the status after the change */
  status: ConversationStatus
}

/** `conversation.created`, `.closed`. */
export const ConversationData = Schema.Struct(conversationFields).annotations({ identifier: "ConversationData" })

/** `conversation.reopened`: a closed conversation is open again, and why. */
export const ConversationReopenedData = Schema.Struct({
  ...conversationFields,
  reason: ReopenReason
}).annotations({ identifier: "ConversationReopenedData" })

/** `conversation.assigned`: the assignee changed (`null`: unassigned). */
export const ConversationAssignedData = Schema.Struct({
  ...conversationFields,
  /** the user now assigned, or null when unassigned */
  assignee_id: Schema.NullOr(Id("usr")),
  from_assignee_id: Schema.NullOr(Id("usr")),
  to_assignee_id: Schema.NullOr(Id("usr"))
}).annotations({ identifier: "ConversationAssignedData" })

/** `conversation.updated`: anything else changed; `changed` names the members (today `last_read_at`). */
export const ConversationUpdatedData = Schema.Struct({
  ...conversationFields,
  changed: Schema.Array(Schema.String)
}).annotations({ identifier: "ConversationUpdatedData" })

export const ConversationNoteAddedData = Schema.Struct({
  ...conversationFields,
  note_id: Id("nte"),
  author_type: Schema.Literal("user", "api_key"),
  author_id: Schema.String
}).annotations({ identifier: "ConversationNoteAddedData" })

const channelFields = {
  object: Schema.Literal("channel"),
  object_id: Id("ch"),
  channel_id: Id("ch"),
  status: ChannelStatus
}

/**
 * `channel.created`: like every channel event it says `from_status` (null: the channel did not
 * exist), `to_status` (its first status, equal to `status`) and `reason` (`created`).
 */
export const ChannelCreatedData = Schema.Struct({
  ...channelFields,
  from_status: Schema.Null,
  to_status: ChannelStatus,
  reason: Schema.Literal("created")
}).annotations({ identifier: "ChannelCreatedData" })

const channelMoveFields = {
  ...channelFields,
  from_status: ChannelStatus,
  to_status: ChannelStatus,
  reason: ChannelStatusReason
}

/** `channel.connected`, `.disconnected`, `.requires_repair`. */
export const ChannelStatusChangedData = Schema.Struct({
  ...channelMoveFields,
  /** the linked number (E.164), once known */
  phone_number: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ChannelStatusChangedData" })

export const ChannelArchivedData = Schema.Struct(channelMoveFields).annotations({ identifier: "ChannelArchivedData" })

/** `contact.created`, `.updated`, `.deleted`. */
export const ContactData = Schema.Struct({
  object: Schema.Literal("contact"),
  object_id: Id("cnt"),
  contact_id: Id("cnt"),
  /**
   * `contact.updated` of a merge only: the contact known by WhatsApp's LID alone that was folded
   * into this one once WhatsApp revealed its number (it no longer exists; docs/API.md "Contacts")
   */
  merged_contact_id: Schema.optional(Id("cnt")),
  /** `contact.updated` by WhatsApp's LID mapping only: the members that changed */
  changed: Schema.optional(Schema.Array(Schema.Literal("phone_number", "whatsapp_lid")))
}).annotations({ identifier: "ContactData" })

export const ContactImportCompletedData = Schema.Struct({
  object: Schema.Literal("contact_import"),
  object_id: Id("imp"),
  import_id: Id("imp"),
  status: Schema.Literal("completed", "failed"),
  total_rows: Schema.Number,
  created: Schema.Number,
  updated: Schema.Number,
  skipped: Schema.Number,
  failed: Schema.Number
}).annotations({ identifier: "ContactImportCompletedData" })

/** `template.created`, `.updated`, `.archived`. */
export const TemplateData = Schema.Struct({
  object: Schema.Literal("template"),
  object_id: Id("tpl"),
  template_id: Id("tpl"),
  status: Schema.Literal("active", "archived")
}).annotations({ identifier: "TemplateData" })

/** Campaign events: subscribable, never emitted yet (no campaigns in this deployment). */
export const CampaignData = Schema.Struct({
  object: Schema.Literal("campaign"),
  object_id: Schema.String,
  campaign_id: Schema.String,
  status: Schema.String
}).annotations({ identifier: "CampaignData" })

/** `automation.failed`: subscribable, never emitted yet. */
export const AutomationData = Schema.Struct({
  object: Schema.Literal("automation"),
  object_id: Schema.String,
  automation_id: Schema.String
}).annotations({ identifier: "AutomationData" })

/** The `data` of a test delivery (`POST /v1/webhook-endpoints/{id}/test`), whatever its type. */
export const TestEventData = Schema.Struct({
  object: Schema.String,
  object_id: Schema.String
}).annotations({ identifier: "TestEventData" })

/** The schema of each event type's `data`. */
export const EVENT_DATA = {
  "message.received": MessageReceivedData,
  "message.queued": MessageStatusChangedData,
  "message.sent": MessageStatusChangedData,
  "message.delivered": MessageStatusChangedData,
  "message.read": MessageStatusChangedData,
  "message.failed": MessageStatusChangedData,
  "conversation.created": ConversationData,
  "conversation.assigned": ConversationAssignedData,
  "conversation.updated": ConversationUpdatedData,
  "conversation.closed": ConversationData,
  "conversation.reopened": ConversationReopenedData,
  "conversation.note_added": ConversationNoteAddedData,
  "channel.created": ChannelCreatedData,
  "channel.connected": ChannelStatusChangedData,
  "channel.disconnected": ChannelStatusChangedData,
  "channel.requires_repair": ChannelStatusChangedData,
  "channel.archived": ChannelArchivedData,
  "contact.created": ContactData,
  "contact.updated": ContactData,
  "contact.deleted": ContactData,
  "contact.import_completed": ContactImportCompletedData,
  "template.created": TemplateData,
  "template.updated": TemplateData,
  "template.archived": TemplateData,
  "campaign.started": CampaignData,
  "campaign.paused": CampaignData,
  "campaign.resumed": CampaignData,
  "campaign.completed": CampaignData,
  "campaign.cancelled": CampaignData,
  "campaign.failed": CampaignData,
  "automation.failed": AutomationData
} as const satisfies { readonly [T in EventType]: Schema.Schema.AnyNoContext }

/** Message status data in the declared member order (what encoding would give), without re-validation. */
const orderMessageStatus = (input: unknown): unknown => {
  const d = input as typeof MessageStatusChangedData.Type
  return {
    object: d.object,
    object_id: d.object_id,
    message_id: d.message_id,
    from_state: d.from_state,
    to_state: d.to_state,
    category: d.category,
    ...(d.failure_class === undefined ? {} : { failure_class: d.failure_class }),
    ...(d.error_code === undefined ? {} : { error_code: d.error_code }),
    ...(d.reason === undefined ? {} : { reason: d.reason }),
    ...(d.template === undefined ? {} : { template: { id: d.template.id, slug: d.template.slug } }),
    ...(d.body === undefined ? {} : { body: d.body })
  }
}

/** The `data` of events of type `T`. */
export type EventData<T extends EventType> = Schema.Schema.Type<typeof EVENT_DATA[T]>

/**
 * Message status events are the send and dispatch paths' events (one per send, up to four per
 * message): encoding them through the schema took ~12 us each where `JSON.stringify` of the
 * envelope takes ~2.5 us, so they take the typed-only path: their data is built from our own typed
 * message row and `DomainEvent.make` already checked it against the schema's type. Every other
 * type is encoded (and so validated) through its schema.
 */
const TYPED_ONLY: ReadonlySet<EventType> = new Set(
  EVENT_TYPES.filter((e) => EVENT_DATA[e.type] === MessageStatusChangedData).map((e) => e.type)
)

const encoders = Object.fromEntries(
  Object.entries(EVENT_DATA).map((
    [type, schema]
  ) => [
    type,
    TYPED_ONLY.has(type as EventType) ? orderMessageStatus : Schema.encodeSync(schema as Schema.Schema<unknown>)
  ])
) as { readonly [T in EventType]: (data: unknown) => unknown }
const encodeTestData = Schema.encodeSync(TestEventData)

/** An event to append: built only by `DomainEvent.make` (or `DomainEvent.test`). */
export class DomainEvent<T extends EventType = EventType> {
  private constructor(
    readonly type: T,
    readonly data: { readonly object: string; readonly object_id: string },
    /** a test delivery: `is_test: true` in the envelope, generic `data` */
    readonly isTest: boolean
  ) {}

  /** An event of `type` with its data (checked against `type`'s schema when stored). */
  static make<T extends EventType>(type: T, data: EventData<T>): DomainEvent<T> {
    return new DomainEvent(type, data, false)
  }

  /** A test delivery's event: any type, placeholder data. */
  static test<T extends EventType>(type: T, data: typeof TestEventData.Type): DomainEvent<T> {
    return new DomainEvent(type, data, true)
  }

  /** `data` encoded through its schema (the JSON stored and delivered); throws when it does not conform. */
  encodeData(): unknown {
    return this.isTest ? encodeTestData(this.data) : encoders[this.type](this.data)
  }
}

/** The status event of a message's move to `to`, when that status reports one. */
export const messageStatusEvent = (
  to: MessageStatus,
  data: Omit<EventData<"message.queued">, "to_state">
): DomainEvent | undefined => {
  const type = STATUS_EVENT[to]
  return type === undefined ? undefined : DomainEvent.make(type, { ...data, to_state: to })
}

/**
 * `message.queued` of a message inserted as queued (the send's writes; `MessagesRepo.appendQueuedEvent`);
 * a template send says what it rendered (the status events of text sends keep their shape).
 */
export const queuedEvent = (message: Message): DomainEvent<"message.queued"> =>
  DomainEvent.make("message.queued", {
    object: "message",
    object_id: message.id,
    message_id: message.id,
    from_state: null,
    to_state: "queued",
    category: message.category,
    ...(message.template
      ? { template: { id: message.template.id, slug: message.template.slug }, body: message.text.body }
      : {})
  })

/** The events of a channel's move (`channelMoveEvents`), with the channel's number where they carry it. */
export const channelMoveDomainEvents = (
  channelId: `ch_${string}`,
  move: ChannelMove,
  phoneNumber: string | null
): ReadonlyArray<DomainEvent> =>
  channelMoveEvents(move).map((type) => {
    const fields = {
      object: "channel" as const,
      object_id: channelId,
      channel_id: channelId,
      status: move.to,
      from_status: move.from,
      to_status: move.to,
      reason: move.reason
    }
    return type === "channel.archived"
      ? DomainEvent.make(type, fields)
      : DomainEvent.make(type, { ...fields, phone_number: phoneNumber })
  })
