/**
 * The message state machine, pure. Every change of a message's status is one guarded statement
 * applying exactly these transitions (`UPDATE ... WHERE status IN (ALLOWED_FROM[to])`), whoever
 * makes it (the writer rule: docs/ARCHITECTURE.md "One writer per message, by statement").
 *
 *   queued -> dispatching -> provider_accepted -> sent -> delivered -> read
 *   dispatching -> failed_retryable -> queued (backoff 2 s, 8 s, 32 s) | failed_permanent
 *   provider_accepted -> failed_retryable | failed_permanent (the provider refused it after taking
 *     it: WhatsApp's ack carried an error, or no ack came within the bound, docs/LIMITS.md)
 *   queued -> cancelled (channel archived); queued -> expired (undispatched after 24 h)
 *
 * Receipts can arrive out of order (a `delivered` before its `sent`, a `read` before anything):
 * a receipt may skip forward over the delivery states, never move back.
 */
import { Option, Schema } from "effect"

export const MESSAGE_STATUSES = [
  "created",
  "queued",
  "dispatching",
  "provider_accepted",
  "sent",
  "delivered",
  "read",
  "failed_retryable",
  "failed_permanent",
  "cancelled",
  "expired"
] as const
export const MessageStatus = Schema.Literal(...MESSAGE_STATUSES).annotations({ identifier: "MessageStatus" })
export type MessageStatus = typeof MessageStatus.Type

/** From-states allowed for each target state. */
export const ALLOWED_FROM: Record<MessageStatus, ReadonlyArray<MessageStatus>> = {
  // `created` is reserved for messages not accepted yet; nothing moves into it
  created: [],
  // a send is inserted as queued at once; `created -> queued` is the acceptance of a message
  // staged first (none is today)
  queued: ["created", "failed_retryable"],
  dispatching: ["queued"],
  provider_accepted: ["dispatching"],
  // receipts may overtake the dispatcher's own report, and each other
  sent: ["dispatching", "provider_accepted"],
  delivered: ["dispatching", "provider_accepted", "sent"],
  read: ["dispatching", "provider_accepted", "sent", "delivered"],
  // a provider may refuse a message after taking it (a WhatsApp ack with an error, e.g. 463)
  failed_retryable: ["dispatching", "provider_accepted"],
  failed_permanent: ["dispatching", "failed_retryable", "provider_accepted"],
  // only what has not reached the provider can be withdrawn
  cancelled: ["queued", "failed_retryable"],
  expired: ["queued", "failed_retryable"]
}

export const canTransition = (from: MessageStatus, to: MessageStatus): boolean => ALLOWED_FROM[to].includes(from)

/** No transition leaves these. */
export const TERMINAL_STATUSES: ReadonlyArray<MessageStatus> = MESSAGE_STATUSES.filter((to) =>
  MESSAGE_STATUSES.every((next) => !ALLOWED_FROM[next].includes(to))
)

export const isTerminal = (status: MessageStatus): boolean => TERMINAL_STATUSES.includes(status)

/** Statuses a provider receipt reports. */
export const RECEIPT_STATUSES = ["sent", "delivered", "read"] as const
export type ReceiptStatus = typeof RECEIPT_STATUSES[number]

/** Statuses that report an event of their own; the transient ones report none. */
export const STATUS_EVENT: Partial<
  Record<MessageStatus, "message.queued" | "message.sent" | "message.delivered" | "message.read" | "message.failed">
> = {
  queued: "message.queued",
  sent: "message.sent",
  delivered: "message.delivered",
  read: "message.read",
  failed_permanent: "message.failed"
}

/** Delays before the 1st, 2nd and 3rd retry of a dispatch that failed retryably. */
export const RETRY_DELAYS_MS = [2_000, 8_000, 32_000] as const

/** Dispatch tries in all: the first plus one per retry delay. */
export const MAX_DISPATCH_ATTEMPTS = 1 + RETRY_DELAYS_MS.length

/**
 * After a retryable failure: the delay before the next try (scaled by `RETRY_DELAY_SCALE`), or
 * `None` when the retries are used up and the message fails permanently.
 *
 * @param failedAttempts dispatch attempts that have failed so far, this one included (1, 2, ...)
 */
export const dispatchRetryDelayMs = (failedAttempts: number, scale: number): Option.Option<number> => {
  const delay = RETRY_DELAYS_MS[failedAttempts - 1]
  return delay === undefined || failedAttempts < 1 ? Option.none() : Option.some(Math.round(delay * scale))
}

/** Queued and never dispatched for this long: `expired`. */
export const QUEUED_EXPIRY_MS = 24 * 3600 * 1000

/**
 * Taken by the provider (`provider_accepted`) and never acknowledged for this long: the provider
 * did not take it after all, or its answer was lost. The message fails (`failure.code =
 * "provider_ack_timeout"`, `message.failed`) rather than wait for ever. WhatsApp acks in under a
 * second; a QR link that drops reconnects within its budget (about 6 minutes), so 15 minutes
 * leaves a late ack or receipt every chance first. Not re-sent: it may have reached WhatsApp, and
 * on a restricted number each retry counts as another reach-out.
 */
export const PROVIDER_ACK_TIMEOUT_MS = 15 * 60 * 1000

/** The `failure.code` of a message the provider never acknowledged (`PROVIDER_ACK_TIMEOUT_MS`). */
export const PROVIDER_ACK_TIMEOUT = "provider_ack_timeout"
