/**
 * The heap of another Node process, after a full GC: the process runs with
 * `NODE_OPTIONS=--inspect=127.0.0.1:0` and this talks to it over the inspector protocol
 * (`HeapProfiler.collectGarbage`, then `process.memoryUsage()` evaluated inside it). Nothing is
 * enabled that would slow the process down (no debugger, no profiler) unless asked: the sampling
 * heap profiler tells where the objects still alive were allocated (`liveHeapBySource`).
 */
import { createWriteStream } from "node:fs"
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
  /** starts V8's sampling heap profiler (one sample per `intervalBytes` allocated, on average) */
  readonly startHeapSampling: (intervalBytes: number) => Promise<void>
  /** stops it: the sampled allocations still alive (collected ones are dropped), as V8 reports them */
  readonly stopHeapSampling: () => Promise<SamplingHeapProfile>
  /**
   * full GC, then a heap snapshot written to `path` (V8's .heapsnapshot JSON, readable by Chrome's
   * DevTools and by `HeapSnapshot.ts`), and the URL of every script id (its closures' locations)
   */
  readonly takeHeapSnapshot: (path: string) => Promise<Map<string, Script>>
  readonly close: () => void
}

/** A script of the process: its URL, and its code when it is the workspace's own. */
export interface Script {
  readonly url: string
  readonly source?: string | undefined
}

export interface SamplingHeapProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<SamplingHeapProfileNode>
}

export interface SamplingHeapProfile {
  readonly head: SamplingHeapProfileNode
}

/** Who a frame belongs to: a workspace package (`packages/entities`), a dependency (`@effect/cluster`), or node. */
const sourceOf = (url: string): string | undefined => {
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (dependency) return dependency[1]!
  const own = /\/(packages|services)\/([^/]+)\/src\/([^/?]+)/.exec(url)
  if (own) return `${own[1]}/${own[2]}/${own[3]}`
  return undefined
}

/**
 * Live sampled bytes by who allocated them: each sample goes to the innermost frame that is not
 * `effect` itself (the runtime allocates on behalf of whoever runs on it: the entity's own
 * modules, `@effect/cluster`, `@effect/rpc`, ...), or to `effect` when no other frame is on the stack.
 */
export const liveHeapBySource = (profile: SamplingHeapProfile): Array<{ source: string; bytes: number }> => {
  const totals = new Map<string, number>()
  const walk = (node: SamplingHeapProfileNode, owner: string) => {
    const source = sourceOf(node.callFrame.url)
    const here = source !== undefined && source !== "effect" ? source : owner
    if (node.selfSize > 0) totals.set(here, (totals.get(here) ?? 0) + node.selfSize)
    for (const child of node.children) walk(child, here)
  }
  walk(profile.head, "effect or node")
  return [...totals].map(([source, bytes]) => ({ source, bytes })).sort((a, b) => b.bytes - a.bytes)
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
  /** what the snapshot being taken sends in chunks */
  let snapshotChunks: Array<string> | undefined
  const scripts = new Map<string, string>()
  socket.on("message", (data) => {
    const message = JSON.parse(String(data))
    if (message.method === "HeapProfiler.addHeapSnapshotChunk") snapshotChunks?.push(message.params.chunk)
    if (message.method === "Debugger.scriptParsed") scripts.set(message.params.scriptId, message.params.url)
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
    startHeapSampling: async (intervalBytes) => {
      await send("HeapProfiler.enable")
      await send("HeapProfiler.startSampling", { samplingInterval: intervalBytes })
    },
    stopHeapSampling: async () => (await send("HeapProfiler.stopSampling")).profile as SamplingHeapProfile,
    takeHeapSnapshot: async (path) => {
      // the debugger only to learn the scripts' URLs (it reports every script parsed so far) and
      // the code of the workspace's own (its anonymous closures are told apart by their text)
      await send("Debugger.enable")
      const sources = new Map<string, string>()
      for (const [id, url] of scripts) {
        if (/\/(packages|services)\/[^/]+\/src\//.test(url) && !url.includes("node_modules")) {
          sources.set(id, (await send("Debugger.getScriptSource", { scriptId: id })).scriptSource)
        }
      }
      await send("Debugger.disable")
      await send("HeapProfiler.collectGarbage")
      await send("HeapProfiler.collectGarbage")
      const chunks: Array<string> = []
      snapshotChunks = chunks
      await send("HeapProfiler.takeHeapSnapshot", { reportProgress: false, captureNumericValue: false })
      snapshotChunks = undefined
      const out = createWriteStream(path)
      for (const chunk of chunks) out.write(chunk)
      await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => error ? reject(error) : resolve()))
      return new Map([...scripts].map(([id, url]) => [id, { url, source: sources.get(id) }]))
    },
    close: () => socket.close()
  }
}
