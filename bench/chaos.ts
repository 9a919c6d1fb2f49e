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
 * then, every time: accepted messages not `read`, messages without a 201, events never delivered.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \
 *     flock /tmp/sb-bench.lock npm run bench:chaos -- --scenario all --runs 3 [--outage 10] [--rate 10]
 */
import { e2eDatabase } from "@switchboard/db/testing"
import { settle, startChaosStack, startLoad, tally, webhookListenerHost } from "../test/support/Chaos.js"
import type { ChaosStack, Sent } from "../test/support/Chaos.js"
import { startPostgres, startRedis } from "../test/support/PrivateServers.js"
import { call } from "../test/support/Processes.js"
import { flag, numberFlag, record } from "./lib/Measure.js"
import { requireRealServers } from "./lib/Stack.js"

const RUNS = numberFlag("runs", 3)
const OUTAGE_S = numberFlag("outage", 10)
const RATE = numberFlag("rate", 10)
const SCENARIO = String(flag("scenario") ?? "all")

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

const scenarios: Record<string, () => Promise<Record<string, unknown>>> = { postgres, redis, api, singletons }

const main = async () => {
  requireRealServers()
  const names = SCENARIO === "all" ? Object.keys(scenarios) : SCENARIO.split(",")
  for (const name of names) {
    const scenario = scenarios[name]
    if (scenario === undefined) throw new Error(`unknown scenario ${name}`)
    for (let run = 1; run <= RUNS; run++) {
      log(`${name} run ${run}/${RUNS} (outage ${OUTAGE_S} s, ${RATE} sends/s)`)
      const result = await scenario()
      console.log(record("chaos", { scenario: name, run, outage_s: OUTAGE_S, rate: RATE, ...result }))
    }
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(2)
})
