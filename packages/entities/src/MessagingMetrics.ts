/**
 * What the runners record about messages (docs/OPERATING.md "Metrics"): status changes by the
 * Message entity, and the dispatch lag across channels the message sweeper samples. In memory;
 * the lag costs one query per sweep, on the one runner that holds the sweeper.
 */
import { Effect, Metric, MetricKey, MetricLabel } from "effect"

const transitionsKey = MetricKey.counter("switchboard_message_transitions_total", {
  description: "Message status changes, by new status and channel provider",
  incremental: true
})

/**
 * One counter per (status, provider), made once: `Metric.tagged` on every update built a new key,
 * merged label arrays and looked the key up in the registry by hash, per move (it showed in the
 * dispatch path's profile).
 */
const transitionCounters = new Map<string, Metric.Metric.Counter<number>>()

export const recordTransition = (status: string, provider: string) =>
  Effect.suspend(() => {
    const id = `${status}\u0000${provider}`
    let counter = transitionCounters.get(id)
    if (counter === undefined) {
      counter = Metric.fromMetricKey(
        MetricKey.taggedWithLabels(transitionsKey, [
          MetricLabel.make("status", status),
          MetricLabel.make("provider", provider)
        ])
      )
      transitionCounters.set(id, counter)
    }
    return Metric.increment(counter)
  })

/**
 * The age of each dispatching channel's oldest queued message, summarised across channels (never
 * one series per channel) by one gauge each (Prometheus reserves the `quantile` label for
 * summaries, whose `_sum` and `_count` a snapshot across channels has not): the median, the 90th
 * and 99th percentiles and the largest (the oldest anywhere); 0 when nothing waits.
 */
const lag = (what: string) => ({
  description: `Age of the oldest queued message per connected channel: ${what} across channels`
})

/** Each lag gauge with the fraction of channels at or under it (1: the largest). */
export const LAG_GAUGES = [
  [0.5, Metric.gauge("switchboard_dispatch_lag_p50_seconds", lag("the median"))],
  [0.9, Metric.gauge("switchboard_dispatch_lag_p90_seconds", lag("the 90th percentile"))],
  [0.99, Metric.gauge("switchboard_dispatch_lag_p99_seconds", lag("the 99th percentile"))],
  [1, Metric.gauge("switchboard_dispatch_lag_max_seconds", lag("the largest (the oldest queued message anywhere)"))]
] as const

export const backloggedChannels = Metric.gauge("switchboard_dispatch_backlogged_channels", {
  description: "Connected channels with at least one queued message"
})

export const queuedMessages = Metric.gauge("switchboard_dispatch_queued_messages", {
  description: "Messages queued on connected channels"
})

/** The `q` quantile of ascending `sorted` (nearest rank); 0 for none. */
export const quantile = (sorted: ReadonlyArray<number>, q: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!

/** Sets the lag gauges from each backlogged channel's oldest queued message age (seconds) and queue length. */
export const recordLag = (channels: ReadonlyArray<{ readonly ageSeconds: number; readonly queued: number }>) =>
  Effect.suspend(() => {
    const ages = channels.map((c) => Math.max(0, c.ageSeconds)).sort((a, b) => a - b)
    return Effect.all([
      ...LAG_GAUGES.map(([q, gauge]) => Metric.set(gauge, quantile(ages, q))),
      Metric.set(backloggedChannels, channels.length),
      Metric.set(queuedMessages, channels.reduce((sum, c) => sum + c.queued, 0))
    ], { discard: true })
  })

/** Zeroes the lag gauges: the sweeper moved to another runner, which reports from now on. */
export const clearLag = recordLag([])
