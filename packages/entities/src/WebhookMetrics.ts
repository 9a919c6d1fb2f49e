/**
 * Webhook deliveries as the WebhookEndpoint entities see them (docs/OPERATING.md "Metrics").
 */
import { Metric, MetricBoundaries } from "effect"

export const deliveries = Metric.counter("switchboard_webhook_deliveries_total", {
  description:
    "Webhook delivery attempts recorded, by outcome (succeeded, retrying, failed, dead) and reason (ok when delivered)",
  incremental: true
})

/** From the event's creation to the attempt's POST: first attempts show how far behind delivery runs. */
export const latency = Metric.histogram(
  "switchboard_webhook_delivery_latency_seconds",
  MetricBoundaries.fromIterable([0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600]),
  "Time from an event's creation to the POST of a delivery attempt, by attempt (first, retry)"
)

export const endpointsDisabled = Metric.counter("switchboard_webhook_endpoints_disabled_total", {
  description: "Webhook endpoints disabled after consecutive failures",
  incremental: true
})

export const recordAttempt = (outcome: string, reason: string) =>
  Metric.increment(Metric.tagged(Metric.tagged(deliveries, "outcome", outcome), "reason", reason))

export const recordLatency = (attempt: number, seconds: number) =>
  Metric.update(Metric.tagged(latency, "attempt", attempt <= 1 ? "first" : "retry"), Math.max(0, seconds))
