/**
 * QR channels on this runner (docs/OPERATING.md "Metrics"): how many live connections are in
 * each pairing state, and why sockets close and reconnect (WhatsApp's close codes: 515 restart
 * required, 408 timed out, 428 closed, 401 logged out, 440 replaced, ...). A burst of reconnects
 * with one code is the first sign of WhatsApp pushing back.
 */
import { ChannelStateMachine } from "@switchboard/domain"
import { DisconnectReason } from "baileys"
import { Effect, Metric } from "effect"

export const channels = Metric.gauge("switchboard_qr_channels", {
  description: "Live QR channel connections on this runner, by status (pending, connecting, connected, ...)"
})

export const closes = Metric.counter("switchboard_qr_socket_closes_total", {
  description: "QR sockets closed, by close code (none: closed without one)",
  incremental: true
})

export const reconnects = Metric.counter("switchboard_qr_reconnects_total", {
  description: "QR reconnects started, by the close code that caused them",
  incremental: true
})

export const connectFailures = Metric.counter("switchboard_qr_connect_failures_total", {
  description:
    "QR connection attempts that could not reach WhatsApp, by reason (dns_failed, connection_refused, timeout, ...)",
  incremental: true
})

const code = (closeCode: number | null | undefined) =>
  closeCode === null || closeCode === undefined ? "none" : String(closeCode)

/** One connection enters `status` (and leaves `from`, if it had one). */
export const moved = (from: string | undefined, to: string) =>
  Effect.zipRight(
    from === undefined ? Effect.void : Metric.incrementBy(Metric.tagged(channels, "status", from), -1),
    Metric.incrementBy(Metric.tagged(channels, "status", to), 1)
  )

/** One connection ends while in `status`. */
export const ended = (status: string) => Metric.incrementBy(Metric.tagged(channels, "status", status), -1)

export const closed = (closeCode: number | null | undefined) =>
  Metric.increment(Metric.tagged(closes, "code", code(closeCode)))

export const reconnecting = (closeCode: number | null | undefined) =>
  Metric.increment(Metric.tagged(reconnects, "close_code", code(closeCode)))

export const unreachable = (reason: string) => Metric.increment(Metric.tagged(connectFailures, "reason", reason))

/**
 * Every status and WhatsApp close code at 0 from the start: a series that first appears at 1 is
 * missed by `rate()`/`increase()`, and a dashboard panel of a quiet runner shows 0, not "No data".
 */
export const prime: Effect.Effect<void> = Effect.all([
  ...ChannelStateMachine.CHANNEL_STATUSES.map((status) =>
    Metric.incrementBy(Metric.tagged(channels, "status", status), 0)
  ),
  ...[...new Set([...Object.values(DisconnectReason).filter((v) => typeof v === "number"), null])].map((c) =>
    Metric.incrementBy(Metric.tagged(reconnects, "close_code", code(c)), 0)
  )
], { discard: true })
