/**
 * Benchmark 1 of issue 7: the send path against its limit.
 *
 * (a) our api node with one runner, `POST /v1/messages` on sandbox channels with a test key and a
 *     distinct Idempotency-Key per request;
 * (b) `lib/BareSend.ts`: a bare `node:http` server doing the same durable work in one
 *     transaction on the same database, answering the same JSON.
 *
 * Each run loads a then b at full speed (same connections, same duration), then a then b at a
 * fixed rate (`--rate`, 500/s). Reports accepted/s (2xx), p50/p99, CPU per accepted request
 * (api node + runner vs the bare server; Postgres apart), and the ratio a/b.
 *
 *   npm run bench:send -- [--runs 3] [--duration 20] [--connections 20] [--channels 10]
 *                         [--rate 500] [--rate-connections 50] [--profile DIR]
 *                         [--label NAME]
 *
 * `--profile DIR`: instead of the comparison, loads (a) for `--duration` seconds with the api
 * node and runner under a CPU profiler (lib/CpuProfileHook.mjs, like `--cpu-prof`; profiles written to DIR when they stop) and prints the
 * api node's top functions (lib/CpuProfile.mjs).
 *
 * Sandbox channels pace dispatch at 2 msg/s and refuse sends when their backlog exceeds 24 h of
 * that (172,800 queued); a run queues far fewer, so every send is accepted. HTTP rate limits are
 * off (not production). Messages of both servers stay `queued`: the runner dispatches them at
 * 2/s per channel during both a and b alike.
 */
import type { Result } from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync } from "node:fs"
import { loadavg } from "node:os"
import { resolve } from "node:path"
import { freePort } from "../test/support/Processes.js"
import { cpuSeconds, flag, formatSummary, machine, numberFlag, record, summarize } from "./lib/Measure.js"
import { profileEnv } from "./lib/Profile.js"
import { load } from "./lib/SendLoad.js"
import { passThrough, RECIPIENT, startStack } from "./lib/Stack.js"

const runs = numberFlag("runs", 3)
const duration = numberFlag("duration", 20)
const connections = numberFlag("connections", 20)
const channelCount = numberFlag("channels", 10)
const rate = numberFlag("rate", 500)
const rateConnections = numberFlag("rate-connections", 50)
const profileDir = flag("profile")
const label = flag("label")

const root = resolve(import.meta.dirname, "..")

/** CPU seconds of every process named `postgres` (the server and its backends) so far. */
const postgresCpu = () => {
  let total = 0
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() === "postgres") total += cpuSeconds(Number(entry))
    } catch {
      // exited meanwhile
    }
  }
  return total
}

interface Phase {
  readonly accepted_per_s: number
  readonly p50_ms: number
  readonly p99_ms: number
  readonly accepted: number
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  /** CPU ms per accepted request of the server's own processes */
  readonly cpu_ms_per_accepted: number
  /** of which the api node alone (a only) */
  readonly api_cpu_ms_per_accepted?: number
  readonly postgres_cpu_ms_per_accepted: number
  readonly runner_cpu_ms_per_s: number
  readonly status_codes: Record<string, number>
}

/** the stack's runners, set once it started */
let runnerPids: ReadonlyArray<number> = []

const measure = async (
  run: () => Promise<Result>,
  pids: ReadonlyArray<number>,
  apiPid?: number
): Promise<Phase> => {
  const cpu = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0)
  const runnerCpu = () => runnerPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0)
  const [cpu0, api0, pg0, runner0] = [cpu(), apiPid ? cpuSeconds(apiPid) : 0, postgresCpu(), runnerCpu()]
  const result = await run()
  const [cpu1, api1, pg1, runner1] = [cpu(), apiPid ? cpuSeconds(apiPid) : 0, postgresCpu(), runnerCpu()]
  const accepted = result["2xx"]
  const perAccepted = (seconds: number) => accepted > 0 ? (seconds * 1000) / accepted : Number.NaN
  return {
    accepted_per_s: accepted / result.duration,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    accepted,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    cpu_ms_per_accepted: perAccepted(cpu1 - cpu0),
    ...(apiPid ? { api_cpu_ms_per_accepted: perAccepted(api1 - api0) } : {}),
    postgres_cpu_ms_per_accepted: perAccepted(pg1 - pg0),
    // the runner dispatches in the background during every phase (b too): its CPU per second
    runner_cpu_ms_per_s: ((runner1 - runner0) * 1000) / result.duration,
    status_codes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([k, v]) => [k, v.count]))
  }
}

/** Starts lib/BareSend.ts in its own process; resolves once it listens. */
const startBare = async (databaseUrl: string, workspaceId: string, env: Record<string, string> = {}) => {
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "bench/lib/BareSend.ts"], {
    cwd: root,
    env: {
      PATH: process.env["PATH"] ?? "",
      DATABASE_URL: databaseUrl,
      WORKSPACE_ID: workspaceId,
      HTTP_PORT: String(port),
      ...passThrough(),
      ...env
    },
    stdio: ["ignore", "pipe", "inherit"]
  })
  await new Promise<void>((ready, fail) => {
    let out = ""
    child.stdout!.on("data", (d) => {
      out += d
      if (out.includes("listening")) ready()
    })
    child.once("exit", (code) => fail(new Error(`the bare server exited ${code}`)))
  })
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((done) => {
        child.once("exit", () => done())
        child.kill("SIGTERM")
      })
  }
}

const describe = (name: string, p: Phase) =>
  `${name}: ${p.accepted_per_s.toFixed(1)} accepted/s, p50 ${p.p50_ms} ms, p99 ${p.p99_ms} ms, ` +
  `CPU ${p.cpu_ms_per_accepted.toFixed(2)} ms/accepted` +
  (p.api_cpu_ms_per_accepted !== undefined ? ` (api ${p.api_cpu_ms_per_accepted.toFixed(2)})` : "") +
  `, postgres ${p.postgres_cpu_ms_per_accepted.toFixed(2)} ms/accepted, runner ${
    p.runner_cpu_ms_per_s.toFixed(0)
  } ms/s, non-2xx ${p.non2xx}, errors ${p.errors}`

const main = async () => {
  const profiling = typeof profileDir === "string" ? resolve(profileDir) : undefined
  if (profiling) mkdirSync(profiling, { recursive: true })
  console.log(`machine: ${JSON.stringify(machine())}`)
  const stack = await startStack({
    name: "send",
    runners: 1,
    sandboxNumbers: channelCount,
    ...(profiling ? { env: profileEnv(profiling) } : {})
  })
  const channels = await stack.sandboxChannels(channelCount)
  const apiPid = stack.api.child.pid!
  runnerPids = stack.runners.map((r) => r.child.pid!)
  const serverPids = [apiPid, ...runnerPids]
  try {
    if (profiling) {
      await load(stack.baseUrl, stack.apiKey, channels, { duration: 3, connections })
      // a sampling profile of the database too: which statements are running, every 20 ms
      const database = new URL(stack.dbUrl).pathname.slice(1)
      const running = new Map<string, number>()
      let sampling = true
      const sampler = (async () => {
        while (sampling) {
          const { rows } = await stack.db.query<{ query: string; wait: string | null }>(
            `SELECT query, wait_event_type || ':' || wait_event AS wait FROM pg_stat_activity
             WHERE datname = $1 AND state = 'active' AND pid <> pg_backend_pid()`,
            [database]
          )
          for (const row of rows) {
            const key = `${row.query.replace(/\s+/g, " ").slice(0, 110)}${row.wait ? ` [${row.wait}]` : ""}`
            running.set(key, (running.get(key) ?? 0) + 1)
          }
          await new Promise((r) => setTimeout(r, 20))
        }
      })()
      const phase = await measure(
        () => load(stack.baseUrl, stack.apiKey, channels, { duration, connections }),
        serverPids,
        apiPid
      )
      sampling = false
      await sampler
      console.log(describe("a (profiled)", phase))
      const samples = [...running.values()].reduce((a, b) => a + b, 0)
      console.log(`\nstatements seen running in pg_stat_activity (${samples} sightings):`)
      for (const [query, n] of [...running].sort((x, y) => y[1] - x[1]).slice(0, 30)) {
        console.log(`${String(n).padStart(6)} ${((100 * n) / samples).toFixed(1).padStart(5)}%  ${query}`)
      }
      console.log(`api node pid ${apiPid}: its profile is ${profiling}/CPU.${apiPid}.cpuprofile`)
      return
    }
    const bare = await startBare(stack.dbUrl, stack.workspaceId)
    try {
      // warm both up (JIT, pools, the contact and the conversations exist afterwards)
      await load(stack.baseUrl, stack.apiKey, channels, { duration: 3, connections })
      await load(bare.baseUrl, undefined, channels, { duration: 3, connections })
      const lines: Array<Record<string, any>> = []
      for (let run = 1; run <= runs; run++) {
        const a = await measure(
          () => load(stack.baseUrl, stack.apiKey, channels, { duration, connections }),
          serverPids,
          apiPid
        )
        console.log(`run ${run} ${describe("a  api+runner", a)}`)
        const b = await measure(
          () => load(bare.baseUrl, undefined, channels, { duration, connections }),
          [bare.pid]
        )
        console.log(`run ${run} ${describe("b  bare       ", b)}`)
        const aRate = await measure(
          () =>
            load(stack.baseUrl, stack.apiKey, channels, { duration, connections: rateConnections, overallRate: rate }),
          serverPids,
          apiPid
        )
        console.log(`run ${run} ${describe(`a @${rate}/s      `, aRate)}`)
        const bRate = await measure(
          () => load(bare.baseUrl, undefined, channels, { duration, connections: rateConnections, overallRate: rate }),
          [bare.pid]
        )
        console.log(`run ${run} ${describe(`b @${rate}/s      `, bRate)}`)
        const { rows } = await stack.db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM messages WHERE status = 'queued'"
        )
        const line = {
          run,
          duration_s: duration,
          connections,
          channels: channelCount,
          rate,
          rate_connections: rateConnections,
          a,
          b,
          a_at_rate: aRate,
          b_at_rate: bRate,
          ratio: a.accepted_per_s / b.accepted_per_s,
          load_1min: loadavg()[0],
          queued_after_run: rows[0]?.n,
          // what was measured (e.g. the env it ran with), so the record tells the runs apart
          label: typeof label === "string" ? label : null
        }
        record("send", line)
        lines.push(line)
      }
      const s = (f: (l: Record<string, any>) => number, digits = 1) => formatSummary(summarize(lines.map(f)), digits)
      console.log(`\nsummary over ${runs} runs (median [min–max]), ${connections} connections, ${duration} s each:`)
      console.log(`  a accepted/s      ${s((l) => l.a.accepted_per_s)}`)
      console.log(`  b accepted/s      ${s((l) => l.b.accepted_per_s)}`)
      console.log(`  ratio a/b         ${s((l) => l.ratio, 3)}`)
      console.log(`  a p50 / p99 ms    ${s((l) => l.a.p50_ms)} / ${s((l) => l.a.p99_ms)}`)
      console.log(`  b p50 / p99 ms    ${s((l) => l.b.p50_ms)} / ${s((l) => l.b.p99_ms)}`)
      console.log(
        `  a CPU ms/accepted ${s((l) => l.a.cpu_ms_per_accepted, 2)} (api ${s((l) => l.a.api_cpu_ms_per_accepted, 2)})`
      )
      console.log(`  b CPU ms/accepted ${s((l) => l.b.cpu_ms_per_accepted, 2)}`)
      console.log(
        `  postgres CPU ms/accepted a ${s((l) => l.a.postgres_cpu_ms_per_accepted, 2)}, b ${
          s((l) => l.b.postgres_cpu_ms_per_accepted, 2)
        }`
      )
      console.log(
        `  runner CPU ms/s during a ${s((l) => l.a.runner_cpu_ms_per_s, 0)}, during b ${
          s((l) => l.b.runner_cpu_ms_per_s, 0)
        }`
      )
      console.log(
        `  at ${rate}/s: a ${s((l) => l.a_at_rate.accepted_per_s)} accepted/s p99 ${
          s((l) => l.a_at_rate.p99_ms)
        } ms; b ${s((l) => l.b_at_rate.accepted_per_s)} accepted/s p99 ${s((l) => l.b_at_rate.p99_ms)} ms`
      )
    } finally {
      await bare.stop()
    }
  } finally {
    await stack.stop()
  }
}

await main()
