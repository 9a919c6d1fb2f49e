/**
 * Inbound messages by type and outcome (docs/OPERATING.md "Metrics"): `recorded` (a message record
 * was written), `media_stored` / `media_failed` (its file's download ended), `ignored` with a
 * `reason` (status broadcasts, broadcasts, newsletters: not conversations of this API; a group's
 * change notice; a repeat of a message recorded before). A group chat's message is recorded. Counted where it happens: the recorder and media worker (entities), the QR
 * connection for what it ignores on purpose.
 */
import { Metric, MetricLabel } from "effect"

export const inboundMessages = Metric.counter("switchboard_inbound_messages_total", {
  description: "Inbound messages by type and outcome (recorded, media_stored, media_failed, ignored with reason)",
  incremental: true
})

export type InboundOutcome = "recorded" | "media_stored" | "media_failed" | "ignored"

/** One inbound message of `type` reached `outcome` (`reason`: why it was ignored, `none` otherwise). */
export const countInbound = (type: string, outcome: InboundOutcome, reason = "none") =>
  Metric.increment(Metric.taggedWithLabels(inboundMessages, [
    MetricLabel.make("type", type),
    MetricLabel.make("outcome", outcome),
    MetricLabel.make("reason", reason)
  ]))
