/**
 * Benchmark 3: dispatch accuracy. `--channels` (1000) connected sandbox channels (2 msg/s each)
 * on ONE runner, each with a backlog of `--backlog` (150) queued messages of mixed categories
 * (20% authentication, 40% utility, 40% marketing, creation order shuffled), seeded with SQL
 * (bench/lib/Seed.ts mirrors the API's rows). Then one API send per channel wakes it (as a real
 * send does), and while it runs `--inject` (4) authentication messages a second go to random
 * channels through the API (they must overtake the backlog).
 *
 * From the messages' `-> dispatching` timeline rows (the send slot the channel took):
 * - per channel, dispatches in the window [wake-up done + 5 s, + `--seconds` (60)] / seconds,
 *   against 2 msg/s: mean and worst relative error;
 * - priority inversions: a message dispatched while a message of higher priority (lower number)
 *   of the same channel was queued and not yet dispatched. "Queued since": for seeded rows their
 *   commit before the run; for API sends the moment the bench got the 202 (the row is committed
 *   by then; `created_at` is taken before the request's transaction and can precede the commit by
 *   tens of ms under load). Each inversion's lag (dispatch - queued since) is reported.
 *
 * Then the runner stops and the baseline (bench/lib/BareDispatch.ts: the same durable moves of
 * each message through plain `pg`, flat out, in a process of its own) works the rest of the same
 * backlog for `--bare-seconds` (20): its messages/s and CPU per message against the runner's.
 *
 * npm run bench:dispatch -- [--channels 1000] [--runs 1] [--seconds 60] [--bare-seconds 20] [--profile DIR]
 */
import { spawn } from "node:child_process"
import { resolve } from "node:path"
import { call } from "../test/support/Processes.js"
import { cpuSeconds, flag, formatSummary, numberFlag, percentile, record, summarize } from "./lib/Measure.js"
import { profileEnv } from "./lib/Profile.js"

import * as Seed from "./lib/Seed.js"
import { RECIPIENT, startStack } from "./lib/Stack.js"

const channelCount = numberFlag("channels", 1000)
const runs = numberFlag("runs", 1)
const seconds = numberFlag("seconds", 60)
const perChannel = numberFlag("backlog", 150)
const injectPerSecond = numberFlag("inject", 4)
const warmupMs = numberFlag("warmup", 5000)
const profileDir = flag("profile")
/** seconds of the bare baseline after the runner's window (0 skips it) */
const bareSeconds = numberFlag("bare-seconds", 20)
const TARGET = 2

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const pick = (): Seed.Category => {
  const r = Math.random()
  return r < 0.2 ? "authentication" : r < 0.6 ? "utility" : "marketing"
}

/** The bare baseline on the stack's database (bench/lib/BareDispatch.ts), in a child process. */
const runBare = (databaseUrl: string, workspaceId: string) =>
  new Promise<{ messages: number; messages_per_second: number; cpu_ms_per_message: number }>((done, fail) => {
    const child = spawn(process.execPath, ["--import", "tsx", resolve(import.meta.dirname, "lib/BareDispatch.ts")], {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        WORKSPACE_ID: workspaceId,
        SECONDS: String(bareSeconds),
        CONCURRENCY: "10"
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout.on("data", (chunk) => (out += chunk))
    child.on(
      "exit",
      (code) => code === 0 ? done(JSON.parse(out.trim().split("\n").pop()!)) : fail(new Error(`bare: ${code}`))
    )
  })

const runOnce = async (run: number) => {
  const stack = await startStack({
    name: "dispatch",
    runners: 1,
    env: profileEnv(profileDir)
  })
  try {
    const runnerPid = stack.runners[0]!.child.pid!
    const seedStart = Date.now()
    const channels = await Seed.sandboxChannels(stack.db, stack.workspaceId, channelCount, RECIPIENT)
    const seeded = await Seed.backlog(stack.db, stack.workspaceId, channels, RECIPIENT, perChannel, pick)
    const seedSeconds = (Date.now() - seedStart) / 1000
    console.log(`run ${run}: seeded ${channels.length} channels, ${seeded} messages in ${seedSeconds.toFixed(1)} s`)

    /** API sends: message id -> when the 202 arrived (the row was committed by then) */
    const answered = new Map<string, number>()
    const send = async (channelId: string, category: Seed.Category) => {
      const sent = await call(stack.baseUrl, "POST", "/v1/messages", {
        token: stack.apiKey,
        body: { channel_id: channelId, to: RECIPIENT, text: { body: "bench" }, category }
      })
      if (sent.status !== 202 && sent.status !== 201) throw new Error(`send: ${sent.status} ${sent.text}`)
      answered.set(sent.body.id, Date.now())
    }
    // one real send per channel: the wake-up a send gives
    const kickStart = Date.now()
    let next = 0
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < channels.length) await send(channels[next++]!.id, "utility")
    }))
    const kickEnd = Date.now()
    console.log(`run ${run}: woke ${channels.length} channels in ${((kickEnd - kickStart) / 1000).toFixed(1)} s`)

    const windowStart = kickEnd + warmupMs
    const windowEnd = windowStart + seconds * 1000
    let injected = 0
    let cpu0 = 0
    let cpuCaught = false
    const injector = (async () => {
      while (Date.now() < windowEnd - 1000) {
        if (!cpuCaught && Date.now() >= windowStart) {
          cpu0 = cpuSeconds(runnerPid)
          cpuCaught = true
        }
        const tick = Date.now()
        if (tick >= windowStart) {
          const batch = Array.from(
            { length: injectPerSecond },
            () => channels[Math.floor(Math.random() * channels.length)]!.id
          )
          await Promise.all(batch.map((id) => send(id, "authentication")))
          injected += batch.length
        }
        await sleep(Math.max(0, 1000 - (Date.now() - tick)))
      }
    })()
    await injector
    await sleep(Math.max(0, windowEnd - Date.now()))
    const cpu = cpuSeconds(runnerPid) - cpu0

    // first `-> dispatching` of every message of this workspace
    const dispatched = await stack.db.query(
      `SELECT m.channel_id, count(*)::int AS n FROM messages m
       JOIN LATERAL (SELECT min(at) AS at FROM message_transitions t WHERE t.message_id = m.id AND t.to_state = 'dispatching') d ON true
       WHERE m.workspace_id = $1 AND m.direction = 'outbound' AND d.at >= $2 AND d.at < $3
       GROUP BY m.channel_id`,
      [stack.workspaceId, new Date(windowStart).toISOString(), new Date(windowEnd).toISOString()]
    )
    const counts = new Map<string, number>(dispatched.rows.map((r) => [r.channel_id, r.n]))
    const rates = channels.map((c) => (counts.get(c.id) ?? 0) / seconds)
    const errors = rates.map((r) => Math.abs(r - TARGET) / TARGET)
    // every outbound message with its first `-> dispatching`
    const all = await stack.db.query(
      `SELECT m.id, m.channel_id, m.priority,
         (SELECT min(at) FROM message_transitions t WHERE t.message_id = m.id AND t.to_state = 'dispatching') AS at
       FROM messages m WHERE m.workspace_id = $1 AND m.direction = 'outbound'`,
      [stack.workspaceId]
    )
    const byChannel = new Map<string, Array<{ priority: number; queued: number; at: number }>>()
    for (const r of all.rows) {
      const list = byChannel.get(r.channel_id) ?? []
      list.push({
        priority: r.priority,
        // seeded rows were committed before the run started
        queued: answered.get(r.id) ?? 0,
        at: r.at === null ? Number.POSITIVE_INFINITY : new Date(r.at).getTime()
      })
      byChannel.set(r.channel_id, list)
    }
    /** lag of each inversion: how long the more urgent message had been queued (ms) */
    const inversionLags: Array<number> = []
    for (const list of byChannel.values()) {
      for (const a of list) {
        if (a.at === Number.POSITIVE_INFINITY) continue
        let lag = -1
        for (const b of list) {
          if (b.priority < a.priority && b.queued < a.at && b.at > a.at) lag = Math.max(lag, a.at - b.queued)
        }
        if (lag >= 0) inversionLags.push(lag)
      }
    }
    // the time between a channel's consecutive send slots in the window: 500 ms at 2 msg/s, and
    // whatever is above that is what the loop lost between a slot opening and the next dispatch
    const gaps: Array<number> = []
    for (const list of byChannel.values()) {
      const times = list.map((m) => m.at).filter((at) => at >= windowStart && at < windowEnd).sort((a, b) => a - b)
      for (let i = 1; i < times.length; i++) gaps.push(times[i]! - times[i - 1]!)
    }
    const totalDispatched = rates.reduce((a, b) => a + b, 0) * seconds
    // the baseline on what is left of the same backlog, once the runner is gone
    let bare: Awaited<ReturnType<typeof runBare>> | undefined
    if (bareSeconds > 0) {
      await Promise.all(stack.runners.map((r) => r.stop()))
      bare = await runBare(stack.dbUrl, stack.workspaceId)
    }
    const runnerCpuPerDispatch = (cpu * 1000) / Math.max(1, totalDispatched)
    const result = {
      run,
      channels: channels.length,
      backlog_per_channel: perChannel,
      seconds,
      injected,
      wake_seconds: (kickEnd - kickStart) / 1000,
      dispatched: totalDispatched,
      mean_rate: rates.reduce((a, b) => a + b, 0) / rates.length,
      min_rate: Math.min(...rates),
      max_rate: Math.max(...rates),
      mean_error: errors.reduce((a, b) => a + b, 0) / errors.length,
      worst_error: Math.max(...errors),
      p50_rate: percentile(rates, 50),
      gap_ms_mean: gaps.reduce((a, b) => a + b, 0) / Math.max(1, gaps.length),
      gap_ms_p50: percentile(gaps, 50),
      gap_ms_p90: percentile(gaps, 90),
      gap_ms_p99: percentile(gaps, 99),
      inversions: inversionLags.length,
      inversion_lags_ms: inversionLags.sort((a, b) => a - b).slice(0, 20),
      runner_cpu_ms_per_dispatch: runnerCpuPerDispatch,
      runner_cpu_share: cpu / seconds,
      runner_dispatches_per_second: totalDispatched / seconds,
      bare_messages_per_second: bare?.messages_per_second ?? null,
      bare_cpu_ms_per_message: bare?.cpu_ms_per_message ?? null,
      // >= 0.5 is the goal: the runner spends at most twice the bare CPU on a message
      cpu_ratio_bare_over_runner: bare ? bare.cpu_ms_per_message / runnerCpuPerDispatch : null
    }
    if (profileDir) console.log(`runner profile: CPU.${runnerPid}.cpuprofile`)
    console.log(record("dispatch", { ...result, label: flag("label") ?? null, profile: profileDir !== undefined }))
    return result
  } finally {
    await stack.stop()
  }
}

const results: Array<Awaited<ReturnType<typeof runOnce>>> = []
for (let run = 1; run <= runs; run++) results.push(await runOnce(run))
const line = (name: string, get: (r: (typeof results)[number]) => number, digits = 3) =>
  console.log(`${name}: ${formatSummary(summarize(results.map(get)), digits)}`)
console.log(`--- ${channelCount} channels, ${results.length} runs, medians [min–max]`)
line("mean rate msg/s", (r) => r.mean_rate)
line("mean error", (r) => r.mean_error)
line("worst error", (r) => r.worst_error)
line("gap between a channel's dispatches, mean ms", (r) => r.gap_ms_mean, 1)
line("  p50", (r) => r.gap_ms_p50, 1)
line("  p90", (r) => r.gap_ms_p90, 1)
line("  p99", (r) => r.gap_ms_p99, 1)
line("inversions", (r) => r.inversions, 0)
line("runner CPU ms/dispatch", (r) => r.runner_cpu_ms_per_dispatch, 2)
line("runner dispatches/s", (r) => r.runner_dispatches_per_second, 1)
if (bareSeconds > 0) {
  line("bare messages/s", (r) => r.bare_messages_per_second ?? 0, 1)
  line("bare CPU ms/message", (r) => r.bare_cpu_ms_per_message ?? 0, 2)
  line("CPU ratio bare/runner (goal >= 0.5)", (r) => r.cpu_ratio_bare_over_runner ?? 0, 3)
}
