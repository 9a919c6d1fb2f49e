/**
 * nginx's "lingering close", for answers that end a connection before the request body was read
 * (413 `PAYLOAD_TOO_LARGE`, docs/API.md). Node closes such a connection as soon as the answer is
 * written; bytes the client is still sending then reach a closed socket, the client's kernel gets
 * a reset, its next write fails (EPIPE) and a client that reads after writing never sees the
 * answer. Lingering, the server half-closes instead (the answer and a FIN go out), keeps reading
 * and discarding what arrives, and closes once the client's body ended, after `LINGER.milliseconds`,
 * or past `LINGER.bytes`, whichever comes first: bounded in time and in bytes.
 */
import type { IncomingMessage } from "node:http"
import type { Socket } from "node:net"

export interface LingerLimits {
  /** at most this long after the answer */
  readonly milliseconds: number
  /** at most this many bytes read and discarded after the answer */
  readonly bytes: number
}

export const LINGER: LingerLimits = { milliseconds: 10_000, bytes: 16 * 1024 * 1024 }

const marked = new WeakSet<Socket>()

/**
 * Makes the close that follows the answer to `request` linger. Call it before answering with
 * `Connection: close`; the body is read and discarded from then on.
 */
export const lingerAfterAnswer = (request: IncomingMessage, limits: LingerLimits = LINGER): void => {
  const socket = request.socket as Socket | null
  if (socket === null || socket.destroyed || marked.has(socket)) return
  marked.add(socket)
  let answered = false
  let discarded = 0
  const close = () => socket.destroy()
  request.on("data", (chunk: Buffer) => {
    if (!answered) return
    discarded += chunk.length
    if (discarded > limits.bytes) close()
  })
  request.resume()
  // what Node calls once the answer with `Connection: close` is written (instead of closing at once)
  socket.destroySoon = () => {
    answered = true
    const timer = setTimeout(close, limits.milliseconds)
    timer.unref()
    socket.once("close", () => clearTimeout(timer))
    // the client sent its last byte: nothing more can arrive, close once the answer left
    const afterBody = () => (socket.writableFinished ? close() : socket.once("finish", close))
    if (request.complete) afterBody()
    else request.once("end", afterBody)
    if (socket.writable) socket.end()
  }
}
