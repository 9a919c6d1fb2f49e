/**
 * The events a receiver gets (SPEC 6.1, 6.3): the envelope, typed message status events and
 * `message.received`; any other type decodes as a generic event so receivers can ignore it.
 */
import { Schema } from "effect"

const Envelope = {
  id: Schema.String,
  created_at: Schema.String,
  workspace_id: Schema.String,
  is_test: Schema.optional(Schema.Boolean)
}

const MessageStatusData = Schema.Struct({
  object: Schema.Literal("message"),
  object_id: Schema.String,
  message_id: Schema.String,
  from_state: Schema.NullOr(Schema.String),
  to_state: Schema.String,
  category: Schema.String,
  failure_class: Schema.optional(Schema.String),
  error_code: Schema.optional(Schema.String),
  reason: Schema.optional(Schema.String)
})

export const MessageStatusEvent = Schema.Struct({
  ...Envelope,
  type: Schema.Literal("message.queued", "message.sent", "message.delivered", "message.read", "message.failed"),
  data: MessageStatusData
})

export const MessageReceivedEvent = Schema.Struct({
  ...Envelope,
  type: Schema.Literal("message.received"),
  data: Schema.Struct({
    object: Schema.Literal("message"),
    object_id: Schema.String,
    message_id: Schema.String,
    conversation_id: Schema.String,
    contact_id: Schema.String,
    channel_id: Schema.String,
    direction: Schema.Literal("inbound"),
    type: Schema.String
  })
})

export const OtherEvent = Schema.Struct({
  ...Envelope,
  type: Schema.String,
  data: Schema.Struct({ object: Schema.String, object_id: Schema.String }, {
    key: Schema.String,
    value: Schema.Unknown
  })
})

/** Typed where we know the type; generic otherwise. Test deliveries may carry any data. */
export const WebhookEvent = Schema.Union(MessageStatusEvent, MessageReceivedEvent, OtherEvent)
export type WebhookEvent = typeof WebhookEvent.Type
