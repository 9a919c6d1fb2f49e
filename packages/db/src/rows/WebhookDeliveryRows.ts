/** The rows of `webhook_deliveries` and `webhook_attempts`, and what `WebhookDeliveriesRepo` decodes them to. */
import { Ids, Webhooks } from "@switchboard/domain"
import { Schema } from "effect"
import { decodeRows, iso, isoOrNull, TimestampColumn } from "../Rows.js"
import type { ShardLease } from "../ShardLease.js"

/** A row of `webhook_deliveries`. */
export const DeliveryColumns = Schema.Struct({
  id: Ids.Id("whd"),
  endpoint_id: Ids.Id("wh"),
  event_id: Ids.Id("evt"),
  event_type: Schema.String,
  status: Webhooks.DeliveryStatus,
  attempt_count: Schema.Number,
  max_attempts: Schema.Number,
  response_status: Schema.NullOr(Schema.Number),
  failure_reason: Schema.NullOr(Webhooks.FailureReason),
  latency_ms: Schema.NullOr(Schema.Number),
  replay_count: Schema.Number,
  replay_of: Schema.NullOr(Schema.String),
  is_test: Schema.Boolean,
  next_attempt_at: Schema.NullOr(TimestampColumn),
  created_at: TimestampColumn,
  updated_at: TimestampColumn
})

/** A row of `webhook_attempts`. */
export const AttemptColumns = Schema.Struct({
  delivery_id: Ids.Id("whd"),
  attempt: Schema.Number,
  at: TimestampColumn,
  response_status: Schema.NullOr(Schema.Number),
  failure_reason: Webhooks.FailureReason,
  latency_ms: Schema.NullOr(Schema.Number)
})

/** A delivery claimed by `claimDueMany`, with its envelope and its endpoint's columns. */
export const ClaimedColumns = Schema.Struct({
  id: Schema.String,
  endpoint_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  attempt_count: Schema.Number,
  envelope: Schema.String,
  created_at: TimestampColumn,
  url: Schema.String,
  status: Schema.Literal("active", "paused", "disabled"),
  deleted_at: Schema.NullOr(TimestampColumn),
  secret_sealed: Schema.String,
  previous_secret_sealed: Schema.NullOr(Schema.String),
  previous_secret_expires_at: Schema.NullOr(TimestampColumn)
})

/**
 * A row of `webhook_deliveries` with its rows of `webhook_attempts` (read by a second query),
 * decoded to the domain's `WebhookDelivery`: the one shape of the resource (docs/ARCHITECTURE.md
 * "Adding a resource"). The ids are checked and typed (`whd_...`, `wh_...`, `evt_...`) while
 * decoding, the timestamps become the wire's ISO strings; no mapper, no cast.
 */
export const DeliveryRow = Schema.transform(
  Schema.Struct({ ...DeliveryColumns.fields, attempts: Schema.Array(AttemptColumns) }),
  Webhooks.WebhookDelivery,
  {
    strict: true,
    decode: ({ attempts, ...row }) => ({
      ...row,
      object: "webhook_delivery" as const,
      next_attempt_at: isoOrNull(row.next_attempt_at),
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      attempts: attempts.map(({ delivery_id: _, ...attempt }) => ({ ...attempt, at: iso(attempt.at) }))
    }),
    encode: ({ attempts, object: _, ...delivery }) => ({
      ...delivery,
      attempts: attempts.map((attempt) => ({ ...attempt, delivery_id: delivery.id }))
    })
  }
)

/** A due delivery (`due`): what its attempt is about. */
export const DueDeliveryRow = Schema.Struct({ id: Schema.String, event_id: Schema.String, event_type: Schema.String })
export interface DueDelivery extends Schema.Schema.Type<typeof DueDeliveryRow> {}

/** What `claim` reads back of the delivery it took: this attempt's number and its event's envelope. */
export const ClaimRow = Schema.Struct({ attempt_count: Schema.Number, envelope: Schema.String })

/** A delivery taken for one attempt, with its envelope and its endpoint as they are now. */
export interface ClaimedDelivery extends DueDelivery {
  /** this attempt's number */
  readonly attempt_count: number
  readonly envelope: string
  /** when the delivery was created, with its event (epoch ms; metrics measure delivery latency from it) */
  readonly created_at: number
  readonly endpoint: {
    readonly url: string
    readonly status: "active" | "paused" | "disabled"
    readonly deleted: boolean
    readonly secret_sealed: string
    readonly previous_secret_sealed: string | null
    readonly previous_secret_expires_at: string | null
  }
}

/** A claimed row (decoded: `ClaimedColumns`) as the delivery the sender works on. */
export const toClaimedDelivery = (r: typeof ClaimedColumns.Type): ClaimedDelivery => ({
  id: r.id,
  event_id: r.event_id,
  event_type: r.event_type,
  attempt_count: r.attempt_count,
  envelope: r.envelope,
  created_at: (r.created_at instanceof Date ? r.created_at : new Date(r.created_at)).getTime(),
  endpoint: {
    url: r.url,
    status: r.status,
    deleted: r.deleted_at !== null,
    secret_sealed: r.secret_sealed,
    previous_secret_sealed: r.previous_secret_sealed ?? null,
    previous_secret_expires_at: isoOrNull(r.previous_secret_expires_at)
  }
})

/** What a replay reads of the delivery it replays: its endpoint and event (ids typed while decoding). */
export const ReplayedRow = Schema.Struct({
  endpoint_id: Ids.Id("wh"),
  event_id: Ids.Id("evt"),
  event_type: Schema.String
})

/** A successful attempt, as `recordSuccesses` records it. */
export interface DeliverySuccess {
  readonly id: string
  readonly endpointId: string
  readonly attempt: number
  readonly at: string
  readonly responseStatus: number
  readonly latencyMs: number | null
}

/** The rows of `due`, `claim` and `claimDueMany`, and the ids `recordSuccesses` and `endpointsWithDueWork` read. */
export const decodeDue = decodeRows(DueDeliveryRow)
export const decodeClaim = decodeRows(ClaimRow)
export const decodeClaimed = decodeRows(ClaimedColumns)
export const decodeDeliveryIds = decodeRows(Schema.Struct({ id: Schema.String }))
export const decodeEndpointIds = decodeRows(Schema.Struct({ endpoint_id: Schema.String }))
export const decodeDelivery = Schema.decodeUnknown(DeliveryRow)
export const decodeDeliveries = decodeRows(DeliveryRow)

/** What one endpoint's pull asks for: up to `limit` of its deliveries due at `now`. */
export interface ClaimRequest {
  readonly endpointId: string
  readonly now: string
  readonly limit: number
  /** the pulling entity's shard lease: nothing is taken unless it still holds it (`ShardLease`) */
  readonly lease?: ShardLease | undefined
}
