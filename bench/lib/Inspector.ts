/**
 * The heap of another Node process, after a full GC: the process runs with
 * `NODE_OPTIONS=--inspect=127.0.0.1:0` and this talks to it over the inspector protocol
 * (`HeapProfiler.collectGarbage`, then `process.memoryUsage()` evaluated inside it). Nothing is
 * enabled that would slow the process down (no debugger, no profiler).
 */
import WebSocket from "ws"
import type { ServiceProcess } from "../../test/support/Processes.js"

export interface MemoryUsage {
  readonly rss: number
  readonly heapTotal: number
  readonly heapUsed: number
  readonly external: number
  readonly arrayBuffers: number
}

export interface Inspector {
  /** full GC, then the process's `process.memoryUsage()` (bytes) */
  readonly memoryAfterGc: () => Promise<MemoryUsage>
  readonly close: () => void
}

/** The inspector URL the process printed ("Debugger listening on ws://..."). */
const inspectorUrl = async (service: ServiceProcess, timeoutMs = 30_000): Promise<string> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const match = /Debugger listening on (ws:\/\/\S+)/.exec(service.output())
    if (match) return match[1]!
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error("the process printed no inspector URL (started with NODE_OPTIONS=--inspect=127.0.0.1:0?)")
}

export const connectInspector = async (service: ServiceProcess): Promise<Inspector> => {
  const socket = new WebSocket(await inspectorUrl(service), { perMessageDeflate: false })
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve())
    socket.once("error", reject)
  })
  let nextId = 1
  const waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>()
  socket.on("message", (data) => {
    const message = JSON.parse(String(data))
    const entry = message.id === undefined ? undefined : waiting.get(message.id)
    if (!entry) return
    waiting.delete(message.id)
    if (message.error) entry.reject(new Error(JSON.stringify(message.error)))
    else entry.resolve(message.result)
  })
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<any>((resolve, reject) => {
      const id = nextId++
      waiting.set(id, { resolve, reject })
      socket.send(JSON.stringify({ id, method, params }))
    })
  return {
    memoryAfterGc: async () => {
      await send("HeapProfiler.collectGarbage")
      // a second pass collects what the first one's finalizers released
      await send("HeapProfiler.collectGarbage")
      const result = await send("Runtime.evaluate", {
        expression: "JSON.stringify(process.memoryUsage())",
        returnByValue: true
      })
      return JSON.parse(result.result.value) as MemoryUsage
    },
    close: () => socket.close()
  }
}
