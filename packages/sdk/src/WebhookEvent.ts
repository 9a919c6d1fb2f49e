/**
 * The events a receiver gets: the envelope around each catalogued type's
 * `data`, derived from the domain's schemas (`@switchboard/domain` `EVENT_DATA`), so the types
 * here are the ones the service builds its events with. A test delivery carries placeholder
 * `data`; a type this version does not know (or data it cannot type) decodes as a generic event
 * so receivers can ignore it. Narrow with `isWebhookEvent(event, "message.sent")`.
 */
import { EventCatalogue, Events } from "@switchboard/domain"
import { Schema } from "effect"

const Envelope = {
  id: Schema.String,
  created_at: Schema.String,
  workspace_id: Schema.String,
  is_test: Schema.optional(Schema.Boolean)
}

type EventSchema<T extends EventCatalogue.EventType> = Schema.Struct<
  typeof Envelope & { type: Schema.Literal<[T]>; data: typeof Events.EVENT_DATA[T] }
>

const eventSchema = <T extends EventCatalogue.EventType>(type: T): EventSchema<T> =>
  Schema.Struct({ ...Envelope, type: Schema.Literal(type), data: Events.EVENT_DATA[type] })

/** The schema of each catalogued event type, envelope included. */
export const WEBHOOK_EVENTS = Object.fromEntries(
  EventCatalogue.EVENT_TYPES.map((e) => [e.type, eventSchema(e.type)])
) as {
  readonly [T in EventCatalogue.EventType]: EventSchema<T>
}

/** An event of type `T` with its typed `data`. */
export type WebhookEventOf<T extends EventCatalogue.EventType> = Schema.Schema.Type<EventSchema<T>>

/** Any catalogued event with its typed `data`. */
export const CataloguedEvent = Schema.Union(...EventCatalogue.EVENT_TYPES.map((e) => WEBHOOK_EVENTS[e.type]))
export type CataloguedEvent = typeof CataloguedEvent.Type

export const MessageStatusEvent = Schema.Union(
  WEBHOOK_EVENTS["message.queued"],
  WEBHOOK_EVENTS["message.sent"],
  WEBHOOK_EVENTS["message.delivered"],
  WEBHOOK_EVENTS["message.read"],
  WEBHOOK_EVENTS["message.failed"]
)

export const MessageReceivedEvent = WEBHOOK_EVENTS["message.received"]

/** A test delivery (`POST /v1/webhook-endpoints/{id}/test`): any type, placeholder data. */
export const TestEvent = Schema.Struct({
  ...Envelope,
  type: EventCatalogue.EventTypeName,
  is_test: Schema.Literal(true),
  data: Events.TestEventData
})

/** Any other event: a type this version does not know, or data it cannot type. */
export const OtherEvent = Schema.Struct({
  ...Envelope,
  type: Schema.String,
  data: Schema.Struct({ object: Schema.String, object_id: Schema.String }, {
    key: Schema.String,
    value: Schema.Unknown
  })
})

/** Typed where we know the type; generic otherwise. */
export const WebhookEvent = Schema.Union(CataloguedEvent, TestEvent, OtherEvent)
export type WebhookEvent = typeof WebhookEvent.Type

const guards = Object.fromEntries(
  EventCatalogue.EVENT_TYPES.map((e) => [e.type, Schema.is(WEBHOOK_EVENTS[e.type] as Schema.Schema<unknown>)])
) as Readonly<Record<string, (u: unknown) => boolean>>

/** Whether `event` is an event of `type` with that type's data (a test delivery's placeholder data is not). */
export const isWebhookEvent = <T extends EventCatalogue.EventType>(
  event: WebhookEvent,
  type: T
): event is WebhookEvent & WebhookEventOf<T> => event.type === type && guards[type]?.(event) === true
