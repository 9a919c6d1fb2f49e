/**
 * Webhook deliveries as the WebhookEndpoint entities see them (docs/OPERATING.md "Metrics").
 */
import { Effect, Metric, MetricBoundaries } from "effect"

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

// tagged once, not per attempt: tagging builds a metric key (hashed, looked up) at every call
const attemptCounters = new Map<string, Metric.Metric.Counter<number>>()
const latencyFirst = Metric.tagged(latency, "attempt", "first")
const latencyRetry = Metric.tagged(latency, "attempt", "retry")

export const recordAttempt = (outcome: string, reason: string) => {
  const key = `${outcome}\u0000${reason}`
  let counter = attemptCounters.get(key)
  if (counter === undefined) {
    counter = Metric.tagged(Metric.tagged(deliveries, "outcome", outcome), "reason", reason)
    attemptCounters.set(key, counter)
  }
  return Metric.increment(counter)
}

export const recordLatency = (attempt: number, seconds: number) =>
  Metric.update(attempt <= 1 ? latencyFirst : latencyRetry, Math.max(0, seconds))

/** The disabled-endpoints counter and both latency histograms at 0 from the start (see `SweeperMetrics.prime`). */
export const prime: Effect.Effect<void> = Effect.all([
  Metric.incrementBy(endpointsDisabled, 0),
  Metric.value(latencyFirst),
  Metric.value(latencyRetry)
], { discard: true })
