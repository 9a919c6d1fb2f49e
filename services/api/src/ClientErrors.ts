/**
 * Answers for requests Node's HTTP parser refuses before any route sees them, in the same error
 * envelope as every other answer (OpenAPI description): 408 `REQUEST_TIMEOUT` when headers or
 * body came too slowly (`HTTP_HEADERS_TIMEOUT`, `HTTP_REQUEST_TIMEOUT`), 431
 * `REQUEST_HEADER_FIELDS_TOO_LARGE`, and 400 `BAD_REQUEST` for anything else unparseable. There is
 * no request object here: the response is written on the socket, and the connection closed.
 */
import { randomUUID } from "node:crypto"
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
