/**
 * Classifies a QR socket that closed before its WebSocket opened: the error Baileys reports (a
 * `Boom` whose `data` is the `ws` or Node error) becomes one reason of the documented set
 * (`QrConnectionErrorReason`) and a message that says what to check. Only the configured host,
 * a system error code or an HTTP status reach the message; Node's own text (which can name the
 * addresses a host resolved to) never does.
 */
import { QrConnectionError } from "@switchboard/domain"

export type QrConnectFailure = QrConnectionError.QrConnectFailure

const DNS = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NONAME", "EAI_NODATA"])
const UNREACHABLE = new Set(["ENETUNREACH", "EHOSTUNREACH", "ENETDOWN", "EHOSTDOWN", "EADDRNOTAVAIL"])
const TIMEOUT = new Set(["ETIMEDOUT", "ESOCKETTIMEDOUT"])
const CLOSED = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"])
/** OpenSSL's certificate verdicts as Node reports them (`CERT_HAS_EXPIRED`, `DEPTH_ZERO_SELF_SIGNED_CERT`, ...) */
const isTlsCode = (code: string) =>
  code === "EPROTO" || code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || code.includes("CERT") ||
  code.startsWith("UNABLE_TO_") || code === "HOSTNAME_MISMATCH"

interface Described {
  readonly code: string | undefined
  readonly message: string
}

const describe = (error: unknown): Described => {
  if (typeof error !== "object" || error === null) return { code: undefined, message: String(error ?? "") }
  const e = error as { code?: unknown; message?: unknown; errors?: unknown }
  // happy eyeballs (several addresses) reports an AggregateError; its parts carry the code
  const first = Array.isArray(e.errors) && e.errors.length > 0 ? describe(e.errors[0]) : undefined
  return {
    code: typeof e.code === "string" ? e.code : first?.code,
    message: typeof e.message === "string" ? e.message : ""
  }
}

/** The host of the configured URL (never its credentials, path or query). */
export const hostOf = (websocketUrl: string): string => {
  try {
    return new URL(websocketUrl).host || "WhatsApp"
  } catch {
    return "WhatsApp"
  }
}

/**
 * The reason and message for a socket that closed before its WebSocket opened.
 * @param closeError `lastDisconnect.error` of Baileys' close (`Boom`, its `data` the cause)
 */
export const classifyConnectFailure = (
  closeError: unknown,
  options: { readonly websocketUrl: string; readonly connectTimeoutMs: number }
): QrConnectFailure => {
  const cause = typeof closeError === "object" && closeError !== null && "data" in closeError &&
      typeof closeError.data === "object" && closeError.data !== null
    ? closeError.data
    : closeError
  const { code, message } = describe(cause)
  const safeCode = code !== undefined && /^[A-Z0-9_]{2,40}$/.test(code) ? code : undefined
  const host = hostOf(options.websocketUrl)
  const make = (reason: QrConnectionError.QrConnectionErrorReason, detail?: string): QrConnectFailure => ({
    reason,
    message: QrConnectionError.qrConnectionErrorMessage(reason, host, detail)
  })
  const httpStatus = /Unexpected server response: (\d{3})/.exec(message)?.[1]
  if (code !== undefined && DNS.has(code)) return make("dns_failed", safeCode)
  if (code === "ECONNREFUSED") return make("connection_refused", safeCode)
  if (code !== undefined && UNREACHABLE.has(code)) return make("network_unreachable", safeCode)
  if (code !== undefined && isTlsCode(code)) return make("tls_failed", safeCode)
  // a TLS server that hangs up mid-handshake (a plain server on a wss:// address, a filtering proxy)
  if (code !== undefined && CLOSED.has(code) && /TLS|SSL|secure/i.test(message)) return make("tls_failed", safeCode)
  if ((code !== undefined && TIMEOUT.has(code)) || /timed? ?out/i.test(message)) {
    return make("timeout", safeCode ?? `no answer within ${Math.round(options.connectTimeoutMs / 1000)} s`)
  }
  if (httpStatus !== undefined) return make("connection_closed", `HTTP ${httpStatus}`)
  // no system error: the WebSocket closed on its own before it opened
  if (code === undefined || CLOSED.has(code)) return make("connection_closed", safeCode)
  return make("connection_failed", safeCode)
}
