/**
 * Benchmark 4, entity scale: one runner holding N live Channel entities (sandbox channels,
 * nothing queued; activation connects, and an idle sandbox channel closes its connection and ends
 * its dispatch loop after the entity's `ConnectionIdleTime`, 10 s). Measures
 * - the time to activate them (a volatile `Status` request to each, from a cluster client in this
 *   process, `--concurrency` at a time): the first `--idle-entities`, then the rest;
 * - the runner's idle CPU with `--idle-entities` live entities and with all N (CPU seconds over
 *   `--idle-seconds`, after `--settle` seconds);
 * - its RSS, and its heap after a full GC (over the inspector protocol), minus the same before any
 *   entity existed: heap per entity; right after activation, and again after the idle CPU window
 *   (`--settle` + `--idle-seconds`), when idle channels have closed their connections;
 * - how many entities still hold a connection then (a second `Status` to each), and how many are
 *   live on the runner (`effect_cluster_entities` from its `/metrics`): a runner that lost its
 *   shards on a loaded machine dropped them, and its heap is then not that of live entities;
 * - with `--heap-profile`, where the heap left after the idle window was allocated (V8's sampling
 *   heap profiler from before the first activation; live bytes by package or module, per entity).
 *
 * "Live" means activated and not passivated: the runner runs with ENTITY_MAX_IDLE_TIME=30 minutes
 * (the Channel entity's idle time comes from the cluster's `entityMaxIdleTime`, default 1 minute),
 * so every entity activated during the run is still in memory when it is measured.
 *
 * The channels are written by SQL (bench/lib/Seed.ts), not through the API.
 *
 *   flock /tmp/sb-bench.lock npm run bench:entities -- --entities 10000 --idle-entities 500
 *     [--runner-node-options "--max-semi-space-size=4"] [--label NAME] [--heap-snapshot DIR]
 */
import { Database } from "@switchboard/db"
import { ChannelProtocol, Cluster, ClusterAuthConfig } from "@switchboard/entities"
import { Effect, Layer, ManagedRuntime, Redacted, Schedule } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { clusterSecret, freePort } from "../test/support/Processes.js"
import * as HeapSnapshot from "./lib/HeapSnapshot.js"
import { connectInspector, liveHeapBySource } from "./lib/Inspector.js"
import { cpuSeconds, flag, machine, numberFlag, record, rssMiB } from "./lib/Measure.js"
import * as Seed from "./lib/Seed.js"
import { RECIPIENT, startStack } from "./lib/Stack.js"

const ENTITIES = numberFlag("entities", 10_000)
const IDLE_ENTITIES = Math.min(ENTITIES, numberFlag("idle-entities", 500))
const CONCURRENCY = numberFlag("concurrency", 100)
const IDLE_SECONDS = numberFlag("idle-seconds", 30)
const SETTLE_SECONDS = numberFlag("settle", 10)
const HEAP_PROFILE = flag("heap-profile") === true
/**
 * a directory: a heap snapshot of the runner with `--idle-entities` live and one with all of them
 * (each after the idle window, every connection closed), and what grew per entity between them.
 * Taking a snapshot stops the runner for seconds: on a loaded machine it then misses its shard
 * lock refresh and drops its entities, and the second snapshot is not of live entities (check
 * `live_after_idle`). The first one is always taken with the entities live: compare first
 * snapshots of two code versions (`HeapSnapshot.summarize`, bench/RESULTS.md 4e).
 */
const HEAP_SNAPSHOT = typeof flag("heap-snapshot") === "string" ? String(flag("heap-snapshot")) : undefined
/** more Node/V8 flags for the runner (e.g. "--max-semi-space-size=4"), recorded with the run */
const RUNNER_NODE_OPTIONS = typeof flag("runner-node-options") === "string" ? String(flag("runner-node-options")) : ""

const MiB = 2 ** 20
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const log = (line: string) => console.log(`[entities] ${line}`)

const main = async () => {
  const started = Date.now()
  log(`machine ${JSON.stringify(machine())}`)
  const metricsPort = await freePort()
  const stack = await startStack({
    name: "entities",
    runners: 1,
    env: { ENTITY_MAX_IDLE_TIME: "30 minutes" },
    runnerEnv: () => ({
      NODE_OPTIONS: `--inspect=127.0.0.1:0 ${RUNNER_NODE_OPTIONS}`.trim(),
      METRICS_PORT: String(metricsPort)
    })
  })
  /** Entities live on the runner now (the cluster's `effect_cluster_entities` gauge, all types). */
  const liveEntities = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    return text.split("\n").filter((line) => line.startsWith("effect_cluster_entities"))
      .reduce((sum, line) => sum + Number(line.split(" ").pop()), 0)
  }
  const runner = stack.runners[0]!
  const pid = runner.child.pid!
  const inspector = await connectInspector(runner)
  const client = ManagedRuntime.make(
    Cluster.client.pipe(
      Layer.provide(Database.layerPostgres(Redacted.make(stack.dbUrl), 4)),
      Layer.provide(ClusterAuthConfig.layer({ secrets: ClusterAuthConfig.secretsOf(clusterSecret) }))
    )
  )
  try {
    const seedStart = Date.now()
    const ids = (await Seed.sandboxChannels(stack.db, stack.workspaceId, ENTITIES, RECIPIENT)).map((c) => c.id)
    log(`seeded ${ids.length} channels in ${((Date.now() - seedStart) / 1000).toFixed(1)} s`)

    const activate = (batch: ReadonlyArray<string>) =>
      client.runPromise(Effect.gen(function*() {
        const channel = yield* ChannelProtocol.ChannelEntity.client
        const t0 = Date.now()
        let connected = 0
        yield* Effect.forEach(batch, (id) =>
          channel(id).Status().pipe(
            Effect.catchAllDefect(Effect.fail),
            Effect.retry({ times: 10, schedule: Schedule.spaced("500 millis") }),
            Effect.tap((status) =>
              Effect.sync(() => {
                if (status.connected) connected++
              })
            )
          ), { concurrency: CONCURRENCY, discard: true })
        return { seconds: (Date.now() - t0) / 1000, connected }
      }))

    /** Runner CPU over `IDLE_SECONDS`, after `SETTLE_SECONDS`: percent of one core. */
    const idleCpu = async () => {
      await sleep(SETTLE_SECONDS * 1000)
      const before = cpuSeconds(pid)
      await sleep(IDLE_SECONDS * 1000)
      return ((cpuSeconds(pid) - before) / IDLE_SECONDS) * 100
    }

    await sleep(5000)
    const base = await inspector.memoryAfterGc()
    const baseRss = rssMiB(pid)
    const baseCpu = await idleCpu()
    log(
      `no entities: heap ${(base.heapUsed / MiB).toFixed(1)} MiB, rss ${baseRss.toFixed(0)} MiB, idle cpu ${
        baseCpu.toFixed(1)
      }%`
    )

    if (HEAP_PROFILE) await inspector.startHeapSampling(4096)
    const first = await activate(ids.slice(0, IDLE_ENTITIES))
    const smallCpu = await idleCpu()
    const small = await inspector.memoryAfterGc()
    log(
      `${IDLE_ENTITIES} entities: activated in ${first.seconds.toFixed(1)} s (${first.connected} connected), idle cpu ${
        smallCpu.toFixed(1)
      }%, heap ${(small.heapUsed / MiB).toFixed(1)} MiB`
    )

    const snapshot = async (entities: number) => {
      if (HEAP_SNAPSHOT === undefined) return
      mkdirSync(HEAP_SNAPSHOT, { recursive: true })
      const file = join(HEAP_SNAPSHOT, `runner-${entities}.heapsnapshot`)
      const scripts = await inspector.takeHeapSnapshot(file)
      writeFileSync(`${file}.scripts.json`, JSON.stringify(Object.fromEntries(scripts)))
      log(`heap snapshot with ${entities} live entities: ${file}`)
      return { file, scripts }
    }
    const snapshotSmall = await snapshot(IDLE_ENTITIES)

    const rest = await activate(ids.slice(IDLE_ENTITIES))
    const activationSeconds = first.seconds + rest.seconds
    const rssAfterActivation = rssMiB(pid)
    const full = await inspector.memoryAfterGc()
    const fullRss = rssMiB(pid)
    const liveAfterActivation = await liveEntities()
    const fullCpu = await idleCpu()
    const idle = await inspector.memoryAfterGc()
    const idleRss = rssMiB(pid)
    const liveAfterIdle = await liveEntities()
    const snapshotFull = await snapshot(ENTITIES)
    if (snapshotSmall !== undefined && snapshotFull !== undefined) {
      const a = HeapSnapshot.summarize(HeapSnapshot.readSnapshot(snapshotSmall.file), snapshotSmall.scripts)
      const b = HeapSnapshot.summarize(HeapSnapshot.readSnapshot(snapshotFull.file), snapshotFull.scripts)
      log(`heap snapshots, growth per entity from ${IDLE_ENTITIES} to ${ENTITIES} live entities:`)
      console.log(HeapSnapshot.report(HeapSnapshot.diff(a, b, IDLE_ENTITIES, ENTITIES)))
    }
    if (HEAP_PROFILE) {
      const bySource = liveHeapBySource(await inspector.stopHeapSampling())
      const total = bySource.reduce((sum, s) => sum + s.bytes, 0)
      log(`live heap sampled since before activation: ${(total / MiB).toFixed(1)} MiB, by who allocated it:`)
      for (const { bytes, source } of bySource.slice(0, 20)) {
        log(`  ${(bytes / ENTITIES / 1024).toFixed(2).padStart(7)} KiB/entity  ${source}`)
      }
    }
    const after = await activate(ids)
    const result = {
      entities: ENTITIES,
      idle_entities: IDLE_ENTITIES,
      concurrency: CONCURRENCY,
      connected: first.connected + rest.connected,
      live_after_activation: liveAfterActivation,
      live_after_idle: liveAfterIdle,
      activation_s: Number(activationSeconds.toFixed(1)),
      activation_per_s: Number((ENTITIES / activationSeconds).toFixed(0)),
      rss_mib: Number(fullRss.toFixed(0)),
      rss_after_activation_mib: Number(rssAfterActivation.toFixed(0)),
      rss_base_mib: Number(baseRss.toFixed(0)),
      heap_mib: Number((full.heapUsed / MiB).toFixed(1)),
      heap_base_mib: Number((base.heapUsed / MiB).toFixed(1)),
      heap_per_entity_kib: Number(((full.heapUsed - base.heapUsed) / ENTITIES / 1024).toFixed(1)),
      heap_per_entity_small_kib: Number(((small.heapUsed - base.heapUsed) / IDLE_ENTITIES / 1024).toFixed(1)),
      heap_idle_mib: Number((idle.heapUsed / MiB).toFixed(1)),
      heap_per_entity_idle_kib: Number(((idle.heapUsed - base.heapUsed) / ENTITIES / 1024).toFixed(1)),
      rss_idle_mib: Number(idleRss.toFixed(0)),
      // what V8 holds for its heap (used or not) and what lives outside it, after the idle window
      heap_total_idle_mib: Number((idle.heapTotal / MiB).toFixed(1)),
      external_idle_mib: Number((idle.external / MiB).toFixed(1)),
      heap_total_mib: Number((full.heapTotal / MiB).toFixed(1)),
      runner_node_options: RUNNER_NODE_OPTIONS,
      label: flag("label") ?? null,
      connected_after_idle: after.connected,
      external_mib: Number((full.external / MiB).toFixed(1)),
      idle_cpu_base_pct: Number(baseCpu.toFixed(1)),
      idle_cpu_small_pct: Number(smallCpu.toFixed(1)),
      idle_cpu_full_pct: Number(fullCpu.toFixed(1)),
      wall_s: Math.round((Date.now() - started) / 1000)
    }
    console.log(record("entities", result))
  } finally {
    // a runner that lost its shards (e.g. "Shard lock storage is unhealthy" on a loaded machine)
    // dropped its entities: then the heap measured is not that of live entities
    const problems = runner.output().split("\n").filter((l) => /"logLevel":"(WARN|ERROR)"|level=(WARN|ERROR)/.test(l))
    log(`runner warnings and errors: ${problems.length}`)
    for (const line of problems.slice(0, 5)) log(`  ${line.slice(0, 300)}`)
    inspector.close()
    await client.dispose()
    await stack.stop()
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
