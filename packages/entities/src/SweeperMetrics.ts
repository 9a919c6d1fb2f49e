/**
 * The sweeper singletons' runs and what they found (docs/OPERATING.md "Metrics"): a repair that
 * keeps finding work means wake-ups get lost, runners die or receipts go missing.
 */
import { Effect, Metric } from "effect"

export const runs = Metric.counter("switchboard_sweeper_runs_total", {
  description: "Sweeps run, by sweeper (messages, webhooks, sandbox, partitions) and result (ok, failed)",
  incremental: true
})

export const found = Metric.counter("switchboard_sweeper_found_total", {
  description: "What sweeps found to repair, by sweeper and kind (e.g. due_channels, stuck_dispatching, expired)",
  incremental: true
})

const tagged = (sweeper: string) => Metric.tagged(found, "sweeper", sweeper)

/** Counts `count` items of `kind` found by `sweeper` (nothing for 0). */
export const recordFound = (sweeper: string, kind: string, count: number) =>
  count <= 0 ? Effect.void : Metric.incrementBy(Metric.tagged(tagged(sweeper), "kind", kind), count)

/** Counts one sweep of `effect`: `ok` or `failed` (the failure is left to the caller). */
export const counted = (sweeper: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.onExit(effect, (exit) =>
    Metric.increment(
      Metric.tagged(Metric.tagged(runs, "sweeper", sweeper), "result", exit._tag === "Success" ? "ok" : "failed")
    ))

/** What each sweeper counts in `found` (the kinds its sweeps record). */
export const KINDS = {
  messages: [
    "due_channels",
    "channels_awaiting_receipts",
    "missed_receipts",
    "stuck_dispatching",
    "archived_channel_messages",
    "expired"
  ],
  webhooks: ["stuck_deliveries", "due_endpoints"],
  sandbox: ["expired_sessions", "archived_channels"],
  partitions: ["made_partitions", "dropped_partitions"]
} as const

/**
 * Every sweeper's runs and findings at 0 from the start: a counter that first appears at 1 is
 * missed by `rate()`/`increase()` (Prometheus sees no increase from a series it never saw), and the
 * dashboard's "Sweeper findings" shows 0 for a healthy stack rather than "No data".
 */
export const prime: Effect.Effect<void> = Effect.all(
  Object.entries(KINDS).flatMap(([sweeper, kinds]) => [
    Metric.incrementBy(Metric.tagged(Metric.tagged(runs, "sweeper", sweeper), "result", "failed"), 0),
    ...kinds.map((kind) => Metric.incrementBy(Metric.tagged(tagged(sweeper), "kind", kind), 0))
  ]),
  { discard: true }
)
