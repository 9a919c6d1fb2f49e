/**
 * Answers for requests Node's HTTP parser refuses before any route sees them, in the same error
 * envelope as every other answer (OpenAPI description): 408 `REQUEST_TIMEOUT` when headers or
 * body came too slowly (`HTTP_HEADERS_TIMEOUT`, `HTTP_REQUEST_TIMEOUT`), 431
 * `REQUEST_HEADER_FIELDS_TOO_LARGE`, and 400 `BAD_REQUEST` for anything else unparseable. There is
 * no request object here: the response is written on the socket, and the connection closed.
 * The same for what Node would otherwise answer itself, without a body, before any route sees the
 * request: an HTTP/1.1 request without `Host` (400 `BAD_REQUEST`), an `Expect` other than
 * `100-continue` (417 `EXPECTATION_FAILED`), and `CONNECT` (400 `BAD_REQUEST`: this server is no
 * proxy; Node would close the connection without a word).
 */
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Duplex } from "node:stream"

const envelope = (status: number, reason: string, code: string, message: string) => {
  const body = JSON.stringify({ error: { code, message, details: {} } })
  return `HTTP/1.1 ${status} ${reason}\r\n` +
    "content-type: application/json\r\n" +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    `x-request-id: ${randomUUID()}\r\n` +
    "connection: close\r\n\r\n" +
    body
}

const TIMEOUT = envelope(408, "Request Timeout", "REQUEST_TIMEOUT", "The request was not received in time")
const HEADERS_TOO_LARGE = envelope(
  431,
  "Request Header Fields Too Large",
  "REQUEST_HEADER_FIELDS_TOO_LARGE",
  "The request headers are too large"
)
const BAD_REQUEST = envelope(400, "Bad Request", "BAD_REQUEST", "The request is not valid HTTP")
const CONNECT_REFUSED = envelope(400, "Bad Request", "BAD_REQUEST", "CONNECT is not served: this server is not a proxy")

/** A request that must not reach a route, answered in the envelope on its response. */
const refuse = (res: ServerResponse, status: number, code: string, message: string) => {
  const body = JSON.stringify({ error: { code, message, details: {} } })
  res.shouldKeepAlive = false
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "x-request-id": randomUUID(),
    connection: "close"
  })
  res.end(body)
}

/**
 * An HTTP/1.1 request without `Host` (the server runs with `requireHostHeader: false`, so that it
 * reaches the app and is answered in the envelope, `withoutHost`).
 */
export const lacksHost = (req: IncomingMessage): boolean => req.httpVersion === "1.1" && req.headers.host === undefined

/** The answer to a request `lacksHost`. */
export const WITHOUT_HOST = {
  status: 400,
  body: { error: { code: "BAD_REQUEST", message: "HTTP/1.1 requests need a Host header", details: {} } }
} as const

/** `checkExpectation` listener: an `Expect` other than `100-continue` cannot be met. */
export const expectationFailed = (_req: IncomingMessage, res: ServerResponse) =>
  refuse(res, 417, "EXPECTATION_FAILED", "Only the expectation 100-continue is supported")

/** `connect` listener: a `CONNECT` request is answered, then the connection closed. */
export const refuseConnect = (_req: IncomingMessage, socket: Duplex) => {
  if (socket.writable) socket.end(CONNECT_REFUSED)
  else socket.destroy()
}

/** `clientError` listener of the Node server. */
export const answer = (error: Error & { readonly code?: string }, socket: Duplex) => {
  // a reset connection, or one whose response already started, gets nothing more
  if (
    error.code === "ECONNRESET" || !socket.writable ||
    (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent
  ) {
    socket.destroy()
    return
  }
  const response = error.code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? TIMEOUT
    : error.code === "HPE_HEADER_OVERFLOW"
    ? HEADERS_TOO_LARGE
    : BAD_REQUEST
  socket.end(response)
}
