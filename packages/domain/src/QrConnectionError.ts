/**
 * Why a QR channel could not reach WhatsApp, pure: a small, stable set of reason codes, what each
 * means and what to check. The QR provider classifies a connection attempt that never reached
 * WhatsApp into one of them; `qr/status`, the `qr/stream` frames and the console show the reason
 * with a message built here. A message names only the host the operator configured
 * (`QR_WEBSOCKET_URL`, `web.whatsapp.com` by default) and a system error code or an HTTP status:
 * never a stack trace, an address the host resolved to, or anything secret.
 */
import { Schema } from "effect"

export const QR_CONNECTION_ERROR_REASONS = [
  "dns_failed",
  "connection_refused",
  "network_unreachable",
  "timeout",
  "tls_failed",
  "connection_closed",
  "connection_failed"
] as const

export const QrConnectionErrorReason = Schema.Literal(...QR_CONNECTION_ERROR_REASONS).annotations({
  identifier: "QrConnectionErrorReason",
  description: "Why the connection to WhatsApp failed (docs/STATE-MACHINES.md, \"QR connection errors\")"
})
export type QrConnectionErrorReason = typeof QrConnectionErrorReason.Type

/**
 * Why the last connection attempt could not reach WhatsApp, as a QR connection keeps and reports
 * it (its events, the pairing view across the cluster): the one shape of a connection error.
 * `qr/status` and the `qr/stream` frames show it in the API's wire form (`QrPairingApi`:
 * snake_case, `next_attempt_at` a timestamp). Cleared once WhatsApp answers again or pairing restarts.
 */
export const QrConnectionError = Schema.Struct({
  reason: QrConnectionErrorReason,
  message: Schema.String.annotations({
    description: "What happened and what to check, for a person (names only the configured WhatsApp host)"
  }),
  failures: Schema.Int.annotations({ description: "Attempts in a row that could not reach WhatsApp" }),
  /** epoch ms of the next attempt; `null` once the channel gave up (it is then `disconnected`) */
  nextAttemptAt: Schema.NullOr(Schema.Number)
})
export type QrConnectionError = typeof QrConnectionError.Type

/** One attempt that could not reach WhatsApp, classified (before it is counted): a reason and its message. */
export type QrConnectFailure = Pick<QrConnectionError, "reason" | "message">

/** What each reason means and what to check (the documented table and the second half of every message). */
export const QR_CONNECTION_ERROR_HINTS: {
  readonly [R in QrConnectionErrorReason]: {
    /** when it is reported (for the documentation) */
    readonly when: string
    /** the first half of the message, about `host` */
    readonly summary: (host: string) => string
    readonly check: string
  }
} = {
  dns_failed: {
    when: "the host name does not resolve (`ENOTFOUND`, `EAI_AGAIN`)",
    summary: (host) => `Could not look up ${host} in DNS`,
    check: "Check the server's DNS settings and internet access."
  },
  connection_refused: {
    when: "nothing listens at the address, or a firewall rejects the connection (`ECONNREFUSED`)",
    summary: (host) => `${host} refused the connection`,
    check: "Check the WhatsApp address the server is configured with, and any firewall or proxy on the way."
  },
  network_unreachable: {
    when: "no route to the address (`ENETUNREACH`, `EHOSTUNREACH`)",
    summary: (host) => `No network route to ${host}`,
    check: "Check the server's internet access (network, routes, VPN)."
  },
  timeout: {
    when: "no answer within `QR_CONNECT_TIMEOUT` (`ETIMEDOUT`, the WebSocket handshake timed out)",
    summary: (host) => `${host} did not answer in time`,
    check: "Check the server's internet access and any firewall or proxy that drops connections."
  },
  tls_failed: {
    when: "the certificate is refused or the TLS handshake breaks (`CERT_HAS_EXPIRED`, `EPROTO`, ...)",
    summary: (host) => `The secure connection to ${host} failed`,
    check: "Check for a proxy or firewall that intercepts HTTPS, and the server's clock."
  },
  connection_closed: {
    when: "the connection closed before the WebSocket opened (an HTTP status instead of the upgrade, `ECONNRESET`)",
    summary: (host) => `${host} closed the connection before it opened`,
    check: "Check any proxy or firewall between the server and WhatsApp."
  },
  connection_failed: {
    when: "any other system error before the WebSocket opened",
    summary: (host) => `Could not connect to ${host}`,
    check: "Check the server's internet access; the server's log has the details."
  }
}

/**
 * The message shown for a reason: what happened to `host`, the error code or HTTP status in
 * brackets when known (`ENOTFOUND`, `HTTP 502`), then what to check.
 */
export const qrConnectionErrorMessage = (
  reason: QrConnectionErrorReason,
  host: string,
  detail?: string
): string => {
  const hint = QR_CONNECTION_ERROR_HINTS[reason]
  return `${hint.summary(host)}${detail ? ` (${detail})` : ""}. ${hint.check}`
}
