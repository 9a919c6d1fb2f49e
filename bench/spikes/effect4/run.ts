/**
 * Issue 16 item 6, a spike, not production: the cost ladder's first two rungs on effect 3 (what
 * the project runs), on effect 4, and on bare `node:http` + `pg`, measured the way
 * bench/sendLadder.ts measures the api node: the same fixed load (autocannon, the root's, 20
 * connections, `--duration` seconds per phase), the server process's CPU from /proc/<pid>/stat
 * per request, the median [min–max] over `--runs`.
 *
 *   http    GET /health: the HTTP stack, no database
 *   select  GET /select: + one `SELECT $1` through the SQL client (pool of 10)
 *
 * Servers, each its own process, all started up front and loaded one at a time, round-robin per
 * run so drift in the machine's load spreads over all of them:
 *
 *   bare             bench/spikes/root/bare.ts (root `pg`)
 *   effect3          bench/spikes/root/effect3.ts (root effect 3.22.4, @effect/platform 0.97.2,
 *                    @effect/sql-pg 0.53.0), tracer on (the default)
 *   effect3-notrace  the same with `Layer.setTracerEnabled(false)`
 *   effect4          bench/spikes/effect4/effect4.ts (this directory's effect 4.1.0), tracer on
 *   effect4-notrace  the same with `References.TracerEnabled` false
 *
 * Setup and run, from the repository root (Postgres on DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres):
 *
 *   npm install --prefix bench/spikes/effect4
 *   node --import tsx bench/spikes/effect4/run.ts [--runs 3] [--duration 8] [--connections 20]
 *
 * Appends one JSON line to bench/results/effect4Spike.jsonl.
 */
import autocannon from "autocannon"
import type { Result } from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import { loadavg } from "node:os"
import { resolve } from "node:path"
import { cpuSeconds, flag, formatSummary, machine, numberFlag, record, summarize } from "../../lib/Measure.js"

const runs = numberFlag("runs", 3)
const duration = numberFlag("duration", 8)
const connections = numberFlag("connections", 20)
const only = flag("only")

const root = resolve(import.meta.dirname, "..", "..", "..")

interface Variant {
  readonly name: string
  readonly file: string
  readonly env: Record<string, string>
}

const VARIANTS: ReadonlyArray<Variant> = [
  { name: "bare", file: "bench/spikes/root/bare.ts", env: {} },
  { name: "effect3", file: "bench/spikes/root/effect3.ts", env: {} },
  { name: "effect3-notrace", file: "bench/spikes/root/effect3.ts", env: { TRACER: "off" } },
  { name: "effect4", file: "bench/spikes/effect4/effect4.ts", env: {} },
  { name: "effect4-notrace", file: "bench/spikes/effect4/effect4.ts", env: { TRACER: "off" } }
].filter((v) => typeof only !== "string" || only.split(",").includes(v.name))

const RUNGS = [{ name: "http", path: "/health" }, { name: "select", path: "/select" }] as const

interface Server {
  readonly variant: Variant
  readonly child: ChildProcess
  readonly url: string
}

const start = (variant: Variant): Promise<Server> =>
  new Promise((ok, fail) => {
    const child = spawn(process.execPath, ["--import", "tsx", variant.file], {
      cwd: root,
      env: { ...process.env, ...variant.env, PORT: "0", NODE_ENV: "production" },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    const timer = setTimeout(() => fail(new Error(`${variant.name}: no "listening" line in 60 s: ${out}`)), 60_000)
    child.on("exit", (code) => fail(new Error(`${variant.name} exited ${code}: ${out}`)))
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const port = /listening (\d+)/.exec(out)?.[1]
      if (port) {
        clearTimeout(timer)
        ok({ variant, child, url: `http://127.0.0.1:${port}` })
      }
    })
  })

const load = (url: string, path: string, seconds: number) =>
  autocannon({ url: url + path, connections, duration: seconds, timeout: 30 }) as Promise<Result>

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const main = async () => {
  console.log(`machine: ${JSON.stringify(machine())}`)
  const servers: Array<Server> = []
  try {
    for (const variant of VARIANTS) servers.push(await start(variant))
    for (const server of servers) {
      for (const rung of RUNGS) await load(server.url, rung.path, 2) // warm-up
    }
    const samples = new Map<string, { cpu: Array<number>; rps: Array<number> }>()
    const key = (variant: string, rung: string) => `${variant} ${rung}`
    const loads: Array<number> = []
    for (let run = 1; run <= runs; run++) {
      loads.push(loadavg()[0]!)
      for (const server of servers) {
        for (const rung of RUNGS) {
          await sleep(1000)
          const pid = server.child.pid!
          const cpu0 = cpuSeconds(pid)
          const result = await load(server.url, rung.path, duration)
          const cpu1 = cpuSeconds(pid)
          const total = result.requests.total
          const ok = result["2xx"]
          if (ok !== total || result.errors > 0 || result.non2xx > 0) {
            throw new Error(`${server.variant.name} ${rung.name}: ${ok} of ${total} 2xx, ${result.errors} errors`)
          }
          const cpu = ((cpu1 - cpu0) * 1000) / total
          const rps = total / result.duration
          const s = samples.get(key(server.variant.name, rung.name)) ?? { cpu: [], rps: [] }
          s.cpu.push(cpu)
          s.rps.push(rps)
          samples.set(key(server.variant.name, rung.name), s)
          console.log(
            `run ${run} ${server.variant.name.padEnd(16)} ${rung.name.padEnd(6)}: ${rps.toFixed(0)} req/s, CPU ${
              cpu.toFixed(3)
            } ms/req`
          )
        }
      }
    }
    console.log(
      `\nmedian [min–max] over ${runs} runs, ${connections} connections, ${duration} s per phase, load ${
        loads.map((l) => l.toFixed(2)).join(" ")
      } at the start of each run:\n`
    )
    console.log("| server | rung | CPU ms/req | + select over http | req/s |")
    console.log("|---|---|---|---|---|")
    const summary: Record<string, unknown> = {}
    for (const server of servers) {
      const http = summarize(samples.get(key(server.variant.name, "http"))!.cpu)
      for (const rung of RUNGS) {
        const s = samples.get(key(server.variant.name, rung.name))!
        const cpu = summarize(s.cpu)
        const rps = summarize(s.rps)
        summary[key(server.variant.name, rung.name)] = { cpu_ms_per_req: cpu, rps }
        const delta = rung.name === "select" ? (cpu.median - http.median).toFixed(3) : ""
        console.log(
          `| ${server.variant.name} | ${rung.name} | ${formatSummary(cpu, 3)} | ${delta} | ${formatSummary(rps, 0)} |`
        )
      }
    }
    console.log(record("effect4Spike", { runs, duration, connections, load_1m_per_run: loads, summary }))
  } finally {
    for (const server of servers) server.child.kill("SIGTERM")
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
