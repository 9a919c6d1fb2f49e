/**
 * Sends accepted and refused (docs/OPERATING.md "Metrics"): every use-case that sends
 * (`POST /v1/messages`, a conversation's reply, a template's test-send) goes through
 * `Messages.send`, which records here; a refusal by the rate limiter is recorded by `RateLimits`
 * for the rules that guard sends. In memory only: nothing here touches the database.
 */
import { Effect, Metric, Predicate } from "effect"

export const accepted = Metric.counter("switchboard_sends_accepted_total", {
  description: "Sends accepted (a message queued), by channel provider; an idempotent replay is not counted",
  incremental: true
})

export const refused = Metric.counter("switchboard_sends_refused_total", {
  description: "Sends refused, by reason (the error code in lower case, e.g. channel_not_connected, rate_limited)",
  incremental: true
})

/** The rate-limit rules whose refusals are refused sends. */
export const SEND_RULES: ReadonlySet<string> = new Set(["send", "conversation_reply", "template_test_send"])

/** The reason label of a refusal: the error code of the envelope (`CHANNEL_NOT_FOUND` -> `channel_not_found`). */
export const reasonOf = (error: unknown): string => {
  const cls: unknown = Predicate.isObject(error) ? error.constructor : undefined
  if (Predicate.hasProperty(cls, "code") && typeof cls.code === "string") return cls.code.toLowerCase()
  return "other"
}

export const recordAccepted = (provider: string) => Metric.increment(Metric.tagged(accepted, "provider", provider))

export const recordRefusedReason = (reason: string) => Metric.increment(Metric.tagged(refused, "reason", reason))

export const recordRefused = (error: unknown) => Effect.suspend(() => recordRefusedReason(reasonOf(error)))
