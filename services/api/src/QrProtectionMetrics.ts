/**
 * The QR send checks in `/metrics` (docs/LIMITS.md, "Number protection"), aggregated over all
 * channels (no series per channel): how many sends went to new contacts (recipients who never
 * wrote to the channel) and to known ones, and why sends were refused. A send counts when judged,
 * inside its transaction (one that then fails for another reason still counted).
 */
import { Metric } from "effect"

export const sendChecks = Metric.counter("switchboard_qr_send_checks_total", {
  description:
    "QR sends judged by the safety checks, by recipient (new, known; any for the daily cap) and outcome (accepted, daily_cap, warm_up, timelock, new_chat_cap)",
  incremental: true
})

export const judged = (contact: "new" | "known" | "any", outcome: string) =>
  Metric.increment(Metric.tagged(Metric.tagged(sendChecks, "contact", contact), "outcome", outcome))
