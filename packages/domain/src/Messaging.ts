/**
 * Messages and channels as they appear on the wire. Their state machines are in
 * `MessageStateMachine.ts` and `ChannelStateMachine.ts`, the categories in `MessageCategory.ts`.
 */
import { Schema } from "effect"
import { ChannelStatus } from "./ChannelStateMachine.js"
import { maxCharacters, minCharacters } from "./Characters.js"
import { Id, IdRef } from "./Ids.js"
import { Category } from "./MessageCategory.js"
import { MessageStatus } from "./MessageStateMachine.js"
import { E164, StrictStruct, Timestamp } from "./Schemas.js"

export const Direction = Schema.Literal("outbound", "inbound")

export const Failure = Schema.Struct({
  class: Schema.Literal("retryable", "permanent"),
  code: Schema.String,
  reason: Schema.String
}).annotations({ identifier: "MessageFailure" })
export type Failure = typeof Failure.Type

export const TimelineEntry = Schema.Struct({
  from_state: Schema.NullOr(MessageStatus),
  to_state: MessageStatus,
  at: Timestamp,
  reason: Schema.NullOr(Schema.String)
}).annotations({ identifier: "TimelineEntry" })

export const MessageFields = {
  id: Id("msg"),
  object: Schema.Literal("message"),
  workspace_id: Id("ws"),
  channel_id: Id("ch"),
  conversation_id: Id("cnv"),
  contact_id: Id("cnt"),
  direction: Direction,
  from: Schema.NullOr(Schema.String),
  to: Schema.String,
  type: Schema.Literal("text", "template"),
  text: Schema.Struct({ body: Schema.String }),
  template: Schema.NullOr(
    Schema.Struct({
      id: Id("tpl"),
      slug: Schema.String,
      variables: Schema.Record({ key: Schema.String, value: Schema.String })
    })
  ).annotations({ description: "A template send: the template and the values it was rendered with (`text.body`)" }),
  category: Category,
  status: MessageStatus,
  failure: Schema.NullOr(Failure),
  metadata: Schema.Record({ key: Schema.String, value: Schema.String }),
  created_at: Timestamp,
  updated_at: Timestamp,
  sent_at: Schema.NullOr(Timestamp),
  delivered_at: Schema.NullOr(Timestamp),
  read_at: Schema.NullOr(Timestamp)
}

export class Message extends Schema.Class<Message>("Message")(MessageFields) {}

export class MessageWithTimeline extends Schema.Class<MessageWithTimeline>("MessageWithTimeline")({
  ...MessageFields,
  timeline: Schema.Array(TimelineEntry)
}) {}

const Metadata = Schema.Record({
  key: Schema.String.pipe(maxCharacters(40)),
  value: Schema.String.pipe(maxCharacters(500))
}).pipe(Schema.filter((m) => Object.keys(m).length <= 20 || "Expected at most 20 metadata pairs"))

export const SendMessageRequest = StrictStruct({
  to: E164,
  channel_id: Schema.optional(IdRef("ch")),
  text: Schema.optional(StrictStruct({
    body: Schema.String.pipe(
      minCharacters(1, "Expected a non-empty text body"),
      maxCharacters(4096, "Expected at most 4096 characters")
    )
  })),
  template: Schema.optional(StrictStruct({
    slug: Schema.String.pipe(Schema.pattern(/^[a-z0-9_]{1,64}$/, { message: () => "Expected a template slug" })),
    variables: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
  })),
  category: Schema.optional(Category),
  metadata: Schema.optional(Metadata)
}).pipe(
  Schema.filter((body) =>
    (body.text === undefined) !== (body.template === undefined) ||
    { path: ["text"], message: "Send exactly one of text and template" }
  )
).annotations({ identifier: "SendMessageRequest" })

export const Provider = Schema.Literal("sandbox", "qr", "cloud").annotations({ identifier: "Provider" })
export type Provider = typeof Provider.Type

export class Channel extends Schema.Class<Channel>("Channel")({
  id: Id("ch"),
  object: Schema.Literal("channel"),
  workspace_id: Id("ws"),
  name: Schema.String,
  provider: Provider,
  status: ChannelStatus,
  status_reason: Schema.NullOr(Schema.String),
  is_default: Schema.Boolean,
  phone_number: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp,
  archived_at: Schema.NullOr(Timestamp)
}) {}

export class Capabilities extends Schema.Class<Capabilities>("Capabilities")({
  channel_id: Id("ch"),
  provider: Provider,
  max_throughput_mps: Schema.Number,
  message_types: Schema.Array(Schema.String),
  refreshed_at: Timestamp
}) {}

/** Provider throughput. */
export const THROUGHPUT_MPS: Record<Provider, number> = { sandbox: 2, qr: 0.5, cloud: 0 }
