import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer, type Server } from "node:http"
import { connect, type Socket } from "node:net"
import { lingerAfterAnswer } from "../src/LingeringClose.js"

const LIMITS = { milliseconds: 300, bytes: 256 * 1024 }

/**
 * A server that answers every request at once with 413 and `Connection: close`, lingering;
 * `closed` resolves when the server closed the first connection.
 */
const withServer = <A>(use: (port: number, closed: Promise<void>) => Promise<A>) =>
  Effect.promise(async () => {
    let onClosed = () => {}
    const closed = new Promise<void>((resolve) => (onClosed = resolve))
    const server: Server = createServer((req, res) => {
      req.socket.once("close", onClosed)
      lingerAfterAnswer(req, LIMITS)
      res.writeHead(413, { "content-type": "application/json", connection: "close", "content-length": "2" })
      res.end("{}")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      return await use((server.address() as { port: number }).port, closed)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

/**
 * Sends headers announcing `announced` bytes, then `bytes` of them, whatever the server answers
 * (its FIN does not stop the writes); resolves when the connection closed.
 */
const client = (port: number, announced: number, bytes: number, end = true) =>
  new Promise<{ readonly answer: string; readonly error: string | null }>((resolve) => {
    const socket: Socket = connect({ host: "127.0.0.1", port, allowHalfOpen: true })
    let answer = ""
    let error: string | null = null
    socket.setEncoding("utf8")
    socket.on("data", (c: string) => (answer += c))
    socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message))
    socket.on("close", () => resolve({ answer, error }))
    socket.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-length: ${announced}\r\n\r\n`)
    const chunk = Buffer.alloc(16 * 1024, "a")
    let sent = 0
    const more = () => {
      if (socket.destroyed) return
      if (sent >= bytes) return void (end && socket.end())
      sent += chunk.length
      socket.write(chunk, (e) => (e ? undefined : setImmediate(more)))
    }
    more()
  })

describe("lingering close", () => {
  it.effect("reads the rest of the body after the answer, then closes when it ended", () =>
    withServer(async (port) => {
      const reply = await client(port, 128 * 1024, 128 * 1024)
      assert.match(reply.answer, /^HTTP\/1\.1 413 /)
      assert.isNull(reply.error)
    }))

  it.effect("closes a client that sends nothing more after the time bound", () =>
    withServer(async (port, closed) => {
      // announces more than it sends and keeps its side open: only the time bound ends it
      const started = Date.now()
      void client(port, 1024 * 1024, 16 * 1024, false)
      await closed
      assert.isAtLeast(Date.now() - started, LIMITS.milliseconds - 50)
    }))

  it.effect("stops reading past the byte bound", () =>
    withServer(async (port) => {
      const reply = await client(port, 64 * 1024 * 1024, 64 * 1024 * 1024)
      assert.match(reply.answer, /^HTTP\/1\.1 413 /)
      // the server closed under the writer long before 64 MiB
      assert.isNotNull(reply.error)
    }))
})
