/**
 * Chaos benchmarks: the scenarios of test/chaos*.e2e.test.ts (test/support/Chaos.ts), longer and
 * repeated, with counts instead of assertions. Each run builds its own stack of real processes on
 * its own database; Postgres and Redis outages use PRIVATE servers (test/support/PrivateServers.ts),
 * never the machine's shared ones.
 *
 * - postgres: a Postgres restart (`pg_ctl stop -m immediate`, `--outage` s, start) under a steady
 *   load of sends: answers during the outage, longest request, first 201 after the restart;
 * - redis: Redis killed for `--outage` s with rate limits on: sends, warnings logged, /ready;
 * - api: kill -9 of one of two api nodes; the client retries with the same Idempotency-Key;
 * - singletons: kill -9 of the runner hosting the webhook sweeper (its LISTEN connection);
 * - scale: runners 1 -> 3 -> 1 (the two added stopped with SIGTERM) under `--scale-rate` sends/s
 *   over `--scale-channels` channels: shard spread and handover times, each channel's dispatch
 *   rate against its send rate;
 * - paused-runner: one of two runners stopped (SIGSTOP) for `--pause` s, then continued;
 * - paused-api: one of two api nodes stopped for `--pause` s; the client times out after
 *   `--client-timeout` ms (5000) and
 *   retries with its Idempotency-Key on the other node;
 * - qr-inbound-outage: a paired QR channel's runner cannot reach Postgres for `--outage` s (a
 *   proxy, bench/lib/QrInboundOutage.ts) while contacts send `--rate` texts a second: texts lost,
 *   doubled, and the time to record them all after Postgres returns;
 * - overload: paused-runner, then scale, each beside a CPU hog (one busy process per core, ended
 *   with the scenario), with the lock refreshes' lateness (the oldest lock row of a live runner);
 * then, every time: accepted messages not `read`, messages without a 201, events never delivered,
 * work done twice (test/support/Faults.ts).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \
 *     flock /tmp/sb-bench.lock npm run bench:chaos -- --scenario all --runs 3 [--outage 10] [--rate 10]
 *   npm run bench:chaos -- --scenario scale,paused-runner,paused-api,overload --runs 3 [--pause 16]
 */
import { e2eDatabase } from "@switchboard/db/testing"
import { loadavg } from "node:os"
import { settle, startChaosStack, startLoad, tally, webhookListenerHost } from "../test/support/Chaos.js"
import type { ChaosOptions, ChaosStack, Sent } from "../test/support/Chaos.js"
import { cpuHog, pausedApi, pausedRunner, scaleOutIn, watchLockAges } from "../test/support/Faults.js"
import { startPostgres, startRedis } from "../test/support/PrivateServers.js"
import { call } from "../test/support/Processes.js"
import { flag, numberFlag, record } from "./lib/Measure.js"
import { qrInboundOutage } from "./lib/QrInboundOutage.js"
import { requireRealServers } from "./lib/Stack.js"

const RUNS = numberFlag("runs", 3)
const OUTAGE_S = numberFlag("outage", 10)
const RATE = numberFlag("rate", 10)
const SCENARIO = String(flag("scenario") ?? "all")
const SCALE_RATE = numberFlag("scale-rate", 20)
const SCALE_CHANNELS = numberFlag("scale-channels", 50)
/** seconds on one runner, on three, on one again */
const SCALE_PHASES = [15, 30, 25] as const
const PAUSE_S = numberFlag("pause", 16)
/** how long the paused-api scenario's client waits for an answer before it retries elsewhere */
const CLIENT_TIMEOUT_MS = numberFlag("client-timeout", 5_000)
/** contacts writing to the QR channel in the qr-inbound-outage scenario */
const QR_CONTACTS = numberFlag("contacts", 5)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const log = (line: string) => console.log(`[chaos] ${line}`)
const ids = (results: ReadonlyArray<Sent>) => results.flatMap((r) => (r.id ? [r.id] : []))

const withStack = async <A>(
  stack: Promise<ChaosStack>,
  cleanup: () => Promise<void>,
  body: (stack: ChaosStack) => Promise<A>
) => {
  let started: ChaosStack | undefined
  try {
    started = await stack
    return await body(started)
  } finally {
    await started?.stop()
    await cleanup()
  }
}

const postgres = async () => {
  const server = await startPostgres()
  return withStack(startChaosStack({ databaseUrl: server.url }), server.destroy, async (stack) => {
    const load = startLoad(stack, { perSecond: RATE })
    await sleep(5_000)
    await server.stop()
    await sleep(OUTAGE_S * 1000)
    await server.start()
    const back = Date.now()
    await sleep(15_000)
    await load.stop()
    const after = load.results.filter((r) => r.status === 201 && r.at + r.ms > back).map((r) => r.at + r.ms - back)
    return {
      answers: tally(load.results),
      longest_request_ms: Math.max(...load.results.map((r) => r.ms)),
      first_201_after_restart_ms: Math.min(...after),
      ...await settle(stack, ids(load.results))
    }
  })
}

const redis = async () => {
  const { databaseUrl } = requireRealServers()
  const server = await startRedis()
  const database = await e2eDatabase(databaseUrl, "bench_chaos_redis")
  const env = { LOG_LEVEL: "warn", RATE_LIMITS: "on", RATE_LIMIT_SEND: "1000000/1 minute" }
  const cleanup = async () => {
    await server.destroy()
    await database.drop()
  }
  return withStack(
    startChaosStack({ databaseUrl: database.url, redisUrl: server.url, env }),
    cleanup,
    async (stack) => {
      const load = startLoad(stack, { perSecond: RATE })
      await sleep(5_000)
      await server.stop()
      await sleep(1_000)
      const ready = await call(stack.apis[0]!.baseUrl, "GET", "/ready")
      await sleep(OUTAGE_S * 1000 - 1_000)
      await server.start()
      await sleep(10_000)
      await load.stop()
      // one warning as the outage begins, a reminder every 30 s, one line when it ends
      const warnings = stack.apis[0]!.output().split("\n").filter((l) => l.includes("rate limiter store"))
      return {
        answers: tally(load.results),
        ready_while_down: ready.status,
        warnings_logged: warnings.length,
        ...await settle(stack, ids(load.results))
      }
    }
  )
}

const api = async () => {
  const { databaseUrl } = requireRealServers()
  const database = await e2eDatabase(databaseUrl, "bench_chaos_api")
  return withStack(startChaosStack({ databaseUrl: database.url, apis: 2 }), database.drop, async (stack) => {
    const load = startLoad(stack, { perSecond: RATE, retry: true })
    await sleep(5_000)
    stack.apis[0]!.child.kill("SIGKILL")
    await sleep(5_000)
    await stack.startApi()
    await sleep(5_000)
    await load.stop()
    const byKey = new Map<string, Array<Sent>>()
    for (const r of load.results) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r])
    const retried = [...byKey.values()].filter((a) => a.length > 1)
    const accepted = ids(load.results)
    return {
      keys: byKey.size,
      attempts: tally(load.results),
      keys_retried: retried.length,
      keys_not_accepted: [...byKey.values()].filter((a) => a[a.length - 1]!.status !== 201).length,
      keys_with_two_ids: [...byKey.values()].filter((a) => new Set(a.flatMap((x) => (x.id ? [x.id] : []))).size > 1)
        .length,
      longest_until_accepted_ms: Math.max(
        0,
        ...retried.map((a) => a[a.length - 1]!.at + a[a.length - 1]!.ms - a[0]!.at)
      ),
      ...await settle(stack, accepted)
    }
  })
}

const singletons = async () => {
  const { databaseUrl } = requireRealServers()
  const database = await e2eDatabase(databaseUrl, "bench_chaos_singletons")
  return withStack(
    startChaosStack({ databaseUrl: database.url, runners: 2, channels: 6 }),
    database.drop,
    async (stack) => {
      const load = startLoad(stack, { perSecond: RATE })
      await sleep(5_000)
      const host = await webhookListenerHost(stack)
      if (host === undefined) throw new Error("no runner listens for webhook deliveries")
      host.child.kill("SIGKILL")
      const killed = Date.now()
      let moved = Number.NaN
      while (Number.isNaN(moved) && Date.now() - killed < 60_000) {
        const next = await webhookListenerHost(stack)
        if (next !== undefined && next !== host) moved = Date.now() - killed
        else await sleep(250)
      }
      await sleep(10_000)
      await load.stop()
      return { answers: tally(load.results), singleton_moved_ms: moved, ...await settle(stack, ids(load.results)) }
    }
  )
}

const onDatabase = async <A>(
  name: string,
  options: Omit<ChaosOptions, "databaseUrl">,
  body: (stack: ChaosStack) => Promise<A>
) => {
  const { databaseUrl } = requireRealServers()
  const database = await e2eDatabase(databaseUrl, name)
  return withStack(startChaosStack({ ...options, databaseUrl: database.url }), database.drop, body)
}

const scale = () =>
  onDatabase(
    "bench_chaos_scale",
    { runners: 1, channels: SCALE_CHANNELS },
    (stack) => scaleOutIn(stack, { perSecond: SCALE_RATE, phases: SCALE_PHASES, log })
  )

const pausedRunnerScenario = () =>
  onDatabase(
    "bench_chaos_paused_runner",
    { runners: 2, channels: 12 },
    (stack) => pausedRunner(stack, { perSecond: RATE, pauseS: PAUSE_S, log })
  )

const pausedApiScenario = () =>
  onDatabase(
    "bench_chaos_paused_api",
    { apis: 2, channels: 6 },
    (stack) => pausedApi(stack, { perSecond: RATE, pauseS: PAUSE_S, timeoutMs: CLIENT_TIMEOUT_MS, log })
  )

/**
 * `body` beside a CPU hog that lasts at most `seconds`, with the lock refresh lateness of the
 * running runners (`skipFirst`: but the first, which the paused-runner scenario stops).
 */
const hogged = async <A extends Record<string, unknown>>(
  stack: ChaosStack,
  seconds: number,
  skipFirst: boolean,
  body: () => Promise<A>
) => {
  const addresses = () =>
    stack.runners.slice(skipFirst ? 1 : 0).filter((r) => r.child.exitCode === null && r.child.signalCode === null)
      .map((r) => stack.runnerInfo.get(r)!.address)
  const ages = watchLockAges(stack.databaseUrl, addresses)
  const hog = cpuHog(seconds * 1000)
  const load_before = loadavg()[0]
  try {
    const result = await body()
    return { ...result, load_1m_before: load_before, oldest_lock_row_s: await ages.stop() }
  } finally {
    await hog.stop()
    await ages.stop()
  }
}

const overload = async () => {
  const paused = await onDatabase(
    "bench_chaos_overload_paused",
    { runners: 2, channels: 12 },
    (stack) => hogged(stack, PAUSE_S + 30, true, () => pausedRunner(stack, { perSecond: RATE, pauseS: PAUSE_S, log }))
  )
  const scaled = await onDatabase(
    "bench_chaos_overload_scale",
    { runners: 1, channels: SCALE_CHANNELS },
    (stack) =>
      hogged(
        stack,
        SCALE_PHASES.reduce((a, b) => a + b, 0) + 10,
        false,
        () => scaleOutIn(stack, { perSecond: SCALE_RATE, phases: SCALE_PHASES, log })
      )
  )
  return { paused_runner: paused, scale: scaled }
}

const scenarios: Record<string, () => Promise<Record<string, unknown>>> = {
  postgres,
  redis,
  api,
  singletons,
  scale,
  "paused-runner": pausedRunnerScenario,
  "paused-api": pausedApiScenario,
  overload,
  "qr-inbound-outage": () => qrInboundOutage({ outageS: OUTAGE_S, rate: RATE, contacts: QR_CONTACTS })
}

/** What each scenario ran with, recorded with its lines (a scenario's own flags, not another's defaults). */
const parameters: Record<string, Record<string, unknown>> = {
  postgres: { outage_s: OUTAGE_S, rate: RATE },
  redis: { outage_s: OUTAGE_S, rate: RATE },
  api: { outage_s: OUTAGE_S, rate: RATE },
  singletons: { outage_s: OUTAGE_S, rate: RATE },
  scale: { rate: SCALE_RATE, channels: SCALE_CHANNELS, phases_s: SCALE_PHASES },
  "paused-runner": { rate: RATE, pause_s: PAUSE_S },
  "paused-api": { rate: RATE, pause_s: PAUSE_S, client_timeout_ms: CLIENT_TIMEOUT_MS },
  "qr-inbound-outage": { outage_s: OUTAGE_S, rate: RATE, contacts: QR_CONTACTS },
  overload: {
    rate: RATE,
    pause_s: PAUSE_S,
    scale_rate: SCALE_RATE,
    scale_channels: SCALE_CHANNELS,
    phases_s: SCALE_PHASES
  }
}

const main = async () => {
  requireRealServers()
  const names = SCENARIO === "all" ? Object.keys(scenarios) : SCENARIO.split(",")
  for (const name of names) {
    const scenario = scenarios[name]
    if (scenario === undefined) throw new Error(`unknown scenario ${name}`)
    for (let run = 1; run <= RUNS; run++) {
      log(`${name} run ${run}/${RUNS} ${JSON.stringify(parameters[name])}`)
      const load_1m_start = loadavg()[0]
      const result = await scenario()
      console.log(record("chaos", { scenario: name, run, ...parameters[name], load_1m_start, ...result }))
    }
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(2)
})
