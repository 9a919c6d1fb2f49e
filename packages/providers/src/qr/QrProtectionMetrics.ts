/**
 * Number protection on this runner's QR channels (docs/LIMITS.md, "Number protection"), in
 * `/metrics` without a series per channel: WhatsApp's restriction signals by kind, its refusals of
 * our messages by failure code, and the recipient checks by answer. A rise in `account_restricted`
 * or `not_on_whatsapp` is the early sign of a number at risk; the channel in question shows it in
 * its `status_reason` and `qr/safety`.
 */
import { Effect, Metric } from "effect"

export const signals = Metric.counter("switchboard_qr_restriction_signals_total", {
  description:
    "WhatsApp's restriction signals on QR channels, by the status reason they set (account_restricted, reachout_timelocked, new_chats_capped, rate_limited, restriction_lifted)",
  incremental: true
})

export const refusals = Metric.counter("switchboard_qr_refused_messages_total", {
  description: "QR messages WhatsApp refused after taking them (an ack with an error), by failure code",
  incremental: true
})

export const recipientChecks = Metric.counter("switchboard_qr_recipient_checks_total", {
  description:
    "Checks that a number is on WhatsApp before a QR channel's first send to it, by result (found, not_on_whatsapp, remembered)",
  incremental: true
})

export const signal = (reason: string) => Metric.increment(Metric.tagged(signals, "signal", reason))

export const refused = (code: string) => Metric.increment(Metric.tagged(refusals, "code", code))

export const checked = (result: "found" | "not_on_whatsapp" | "remembered") =>
  Metric.increment(Metric.tagged(recipientChecks, "result", result))

/** Counts `effect`'s answer as a recipient check (`remembered` when no query was made). */
export const countCheck = <E, R>(effect: Effect.Effect<{ exists: boolean; asked: boolean }, E, R>) =>
  Effect.tap(effect, (r) => checked(!r.asked ? "remembered" : r.exists ? "found" : "not_on_whatsapp"))
