/**
 * Webhook endpoints and deliveries: records, the
 * outcome table that decides retries, and the retry schedule (exponential, equal jitter).
 */
import { Schema } from "effect"
import { equalJitter } from "./Backoff.js"
import { EVENT_TYPES, EventTypeName } from "./EventCatalogue.js"
import { Id } from "./Ids.js"
import { Timestamp } from "./Schemas.js"

export const MAX_ATTEMPTS = 6
export const ATTEMPT_TIMEOUT_MS = 10_000
export const DISABLE_AFTER_FAILURES = 20
export const SECRET_OVERLAP_MS = 24 * 3600 * 1000
export const DELIVERY_RETENTION_MS = 30 * 24 * 3600 * 1000

export const EndpointStatus = Schema.Literal("active", "paused", "disabled")
export type EndpointStatus = typeof EndpointStatus.Type

/**
 * The statuses from which a client's PATCH may set `to` (docs/WEBHOOKS.md "Webhooks"): `active` and
 * `paused` move freely between each other; a `disabled` endpoint (20 consecutive failures) only
 * goes back to `active`, which clears its failure counter. Pausing it would keep the counter and
 * hide why it stopped.
 */
export const clientStatusSources = (to: "active" | "paused"): ReadonlyArray<EndpointStatus> =>
  to === "active" ? ["active", "paused", "disabled"] : ["active", "paused"]
/** An endpoint's consecutive-failure counter and the status it decides. */
export interface FailureCounter {
  readonly status: EndpointStatus
  readonly consecutive_failures: number
}

/**
 * The counter after a failed attempt (docs/WEBHOOKS.md "Webhooks"): one more failure, and an
 * `active` endpoint is `disabled` at its `DISABLE_AFTER_FAILURES`th in a row (a `paused` one keeps
 * counting and stays paused). A disabled endpoint's counter stays as it was (attempts already in
 * flight do not move it): `undefined`, nothing to write. A success resets the counter to 0.
 */
export const afterFailedAttempt = (counter: FailureCounter): FailureCounter | undefined => {
  if (counter.status === "disabled") return undefined
  const failures = counter.consecutive_failures + 1
  return {
    status: counter.status === "active" && failures >= DISABLE_AFTER_FAILURES ? "disabled" : counter.status,
    consecutive_failures: failures
  }
}

export const DeliveryStatus = Schema.Literal("pending", "delivering", "succeeded", "failed", "dead")
export type DeliveryStatus = typeof DeliveryStatus.Type
export const FailureReason = Schema.Literal(
  "ok",
  "server_error",
  "rate_limited",
  "redirect",
  "client_error",
  "network_error",
  "timeout",
  "blocked_target",
  "not_deliverable"
)
export type FailureReason = typeof FailureReason.Type

/** What an HTTP status from a receiver means for the delivery. */
export const outcomeOfStatus = (status: number): { readonly reason: FailureReason; readonly retryable: boolean } =>
  status >= 200 && status < 300
    ? { reason: "ok", retryable: false }
    : status >= 300 && status < 400
    ? { reason: "redirect", retryable: false }
    : status === 429
    ? { reason: "rate_limited", retryable: true }
    : status >= 400 && status < 500
    ? { reason: "client_error", retryable: false }
    : { reason: "server_error", retryable: true }

export const isRetryable = (reason: FailureReason) =>
  reason === "server_error" || reason === "rate_limited" || reason === "network_error" || reason === "timeout"

/**
 * Delay before the next attempt after attempt `n` (1-based), exponential with equal jitter
 * (`Backoff.equalJitter`): uniform in [5 * 2^(n-1), 10 * 2^(n-1)] seconds (5-10, 10-20, 20-40,
 * 40-80, 80-160), times `scale` (docs/RETRIES.md; older texts call this schedule "full jitter").
 */
export const retryDelayMs = (attempt: number, random: number, scale: number) =>
  Math.round(equalJitter(10_000 * 2 ** (attempt - 1), random) * scale)

/**
 * What one attempt makes of its delivery (docs/WEBHOOKS.md "Webhooks", docs/RETRIES.md): `ok` ends
 * it `succeeded`; a retryable reason with attempts left (attempt `attempt` of `MAX_ATTEMPTS`,
 * 1-based) keeps it `pending` until `now` plus `retryDelayMs` (`random` in [0, 1) picks the
 * jitter, `scale` shortens it in tests); a retryable reason on the last attempt ends it `dead`,
 * any other reason `failed`. Times are epoch ms; the caller brings the clock.
 */
export const nextDeliveryState = (
  reason: FailureReason,
  attempt: number,
  now: number,
  random: number,
  scale = 1
): { readonly status: DeliveryStatus; readonly nextAttemptAt: number | null } =>
  reason === "ok"
    ? { status: "succeeded", nextAttemptAt: null }
    : isRetryable(reason) && attempt < MAX_ATTEMPTS
    ? { status: "pending", nextAttemptAt: now + retryDelayMs(attempt, random, scale) }
    : { status: isRetryable(reason) ? "dead" : "failed", nextAttemptAt: null }

export const EventTypeOrAll = Schema.Union(EventTypeName, Schema.Literal("*")).annotations({
  identifier: "EventTypeSubscription",
  message: () => "Expected a known event type (see GET /v1/webhook-event-types) or *"
})

export const isEventTypeOrAll = Schema.is(EventTypeOrAll)

/**
 * A subscription as a request carries it: any string on decoding, so that the use-case refuses
 * an unknown name with `details.reason = "unknown_event_type"`; OpenAPI still lists
 * the accepted names.
 */
export const EventTypeSubscriptionInput = Schema.String.annotations({
  identifier: "EventTypeSubscription",
  description: "An event type of `GET /v1/webhook-event-types`, or `*` for all of them, later ones included",
  jsonSchema: { enum: [...EVENT_TYPES.map((e) => e.type), "*"] }
})

export class WebhookEndpoint extends Schema.Class<WebhookEndpoint>("WebhookEndpoint")({
  id: Id("wh"),
  object: Schema.Literal("webhook_endpoint"),
  url: Schema.String,
  event_types: Schema.Array(Schema.String),
  description: Schema.String,
  status: EndpointStatus,
  secret_last4: Schema.String,
  consecutive_failures: Schema.Number,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export class WebhookEndpointWithSecret extends Schema.Class<WebhookEndpointWithSecret>("WebhookEndpointWithSecret")({
  ...WebhookEndpoint.fields,
  secret: Schema.String.annotations({ description: "`whsec_...`; shown on creation only" })
}) {}

export const DeliveryAttempt = Schema.Struct({
  attempt: Schema.Number,
  at: Timestamp,
  response_status: Schema.NullOr(Schema.Number),
  failure_reason: FailureReason,
  latency_ms: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "DeliveryAttempt" })

export class WebhookDelivery extends Schema.Class<WebhookDelivery>("WebhookDelivery")({
  id: Id("whd"),
  object: Schema.Literal("webhook_delivery"),
  endpoint_id: Id("wh"),
  event_id: Id("evt"),
  event_type: Schema.String,
  status: DeliveryStatus,
  attempt_count: Schema.Number,
  max_attempts: Schema.Number,
  response_status: Schema.NullOr(Schema.Number),
  failure_reason: Schema.NullOr(FailureReason),
  latency_ms: Schema.NullOr(Schema.Number),
  replay_count: Schema.Number,
  replay_of: Schema.NullOr(Schema.String),
  is_test: Schema.Boolean,
  next_attempt_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
  attempts: Schema.Array(DeliveryAttempt)
}) {}
