/**
 * Incoming calls by outcome (docs/OPERATING.md "Metrics"): `missed`, `rejected` (by the call policy
 * or on the phone), `answered_elsewhere`; counted once per call, when its `call` message is recorded
 * (entities `InboundMessages`). `policy_reply` counts the call policy's replies: `queued`, or
 * `skipped` with a reason (the QR daily cap reached, a caller without an address).
 */
import { Metric, MetricLabel } from "effect"

export const calls = Metric.counter("switchboard_calls_total", {
  description:
    "Incoming calls on QR channels by outcome (missed, rejected, answered_elsewhere) and kind (voice, video)",
  incremental: true
})

export const callReplies = Metric.counter("switchboard_call_policy_replies_total", {
  description: "Replies of the call policy to rejected calls, by outcome (queued, skipped) and reason",
  incremental: true
})

/** One call recorded with `outcome`. */
export const countCall = (outcome: string, video: boolean) =>
  Metric.increment(Metric.taggedWithLabels(calls, [
    MetricLabel.make("outcome", outcome),
    MetricLabel.make("kind", video ? "video" : "voice")
  ]))

/** One policy reply `queued`, or `skipped` for `reason`. */
export const countReply = (outcome: "queued" | "skipped", reason = "none") =>
  Metric.increment(Metric.taggedWithLabels(callReplies, [
    MetricLabel.make("outcome", outcome),
    MetricLabel.make("reason", reason)
  ]))
