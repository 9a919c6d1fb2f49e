/**
 * Runners scaled out and in under traffic (docs/OPERATING.md "Scaling runners up and down"): one
 * api node, runners 1 -> 3 -> 1 while sends flow to sandbox channels and every event is posted to
 * a local receiver. The shards spread over the three runners (their own `effect_cluster_shards`
 * gauges and the cluster's lock rows), the two stopped with SIGTERM hand theirs back well within
 * the lock expiry, and at the end every accepted message reached `read`, every event was
 * delivered, nothing was done twice (the dispatch waits and each channel's rate are printed:
 * benchmark figures). While the
 * shards move, the first runner keeps its lock storage healthy (packages/entities/src/Cluster.ts
 * `batchedRelease`) and no shard stays without an owner for a lock expiry. Scaled down
 * from the 20 sends/s to 50 channels (bench/chaos.ts `--scenario scale` runs that size).
 * Real Postgres only.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { startChaosStack } from "./support/Chaos.js"
import type { ChaosStack } from "./support/Chaos.js"
import { scaleOutIn } from "./support/Faults.js"

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("runners scaled 1 -> 3 -> 1 under traffic", () => {
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let stack: ChaosStack | undefined

  afterAll(async () => {
    await stack?.stop()
    await database?.drop()
  }, 60_000)

  it(
    "spreads the shards, hands them back on SIGTERM without the expiry wait, and loses or doubles nothing",
    async () => {
      database = await e2eDatabase(url!, "scale")
      const began = Date.now()
      stack = await startChaosStack({ databaseUrl: database.url, runners: 1, channels: 6 })
      const started = began
      const log = (line: string) => console.log(`[scale] ${((Date.now() - started) / 1000).toFixed(1)} s ${line}`)
      log("stack up")
      const result = await scaleOutIn(stack, { perSecond: 6, phases: [6, 14, 12], log })
      console.log(`[scale] ${JSON.stringify(result)}`)
      assert.deepStrictEqual(result.shards_before, [300], "one runner holds every shard")
      assert.lengthOf(result.shards_spread, 3)
      assert.isTrue(result.shards_spread.every((n) => n > 0), `every runner holds shards: ${result.shards_spread}`)
      assert.strictEqual(result.shards_spread.reduce((a, b) => a + b, 0), 300)
      assert.deepStrictEqual(result.shards_after, [300], "the first runner holds every shard again")
      // giving 200 shards away did not make the first runner miss a lock refresh and drop them all
      assert.strictEqual(result.lock_storage_unhealthy[0], 0, "the first runner kept its lock storage healthy")
      // shards pass from the first runner to the new ones without waiting for a lock to expire
      assert.isBelow(result.unowned_longest_s, 8, "no shard without an owner for a lock expiry")
      assert.deepStrictEqual(result.scale_in_exit_codes, [0, 0], "the stopped runners exited cleanly")
      // a runner that stopped with SIGTERM deleted its lock rows: no 8 s expiry to wait for
      assert.isBelow(result.handover_s, 8, "shards handed over before a lock could expire")
      // The longest dispatch wait around each step and each channel's dispatch rate against its send
      // rate (`longest_wait_scale_out_s`, `worst_rate_deviation_pct`, printed above) are benchmark
      // figures (bench:chaos --scenario scale, bench/RESULTS.md "Operators' day two"), not bounds:
      // they measure the machine as much as the shard moves. On the 2-core machine at load 22 every
      // message waited 26 s (median) and the worst 53 s, the rate was 19.5% off, while no shard
      // was without an owner for more than 0.4 s; a 5% rate bound failed at 5.0% on a quieter run.
      // What a shard move could cost a user is bounded above: no shard without an owner, and no
      // SIGTERM handover, for as long as a lock expiry; every message read, none twice.
      assert.deepStrictEqual(result.answers, { "201": result.accepted })
      assert.strictEqual(result.notRead, 0, "every accepted message reached read")
      assert.strictEqual(result.unaccounted, 0)
      assert.strictEqual(result.eventsMissing, 0, "every event delivered")
      assert.strictEqual(result.dispatched_twice, 0, "no message taken for a dispatch twice")
      assert.strictEqual(result.offered_twice, 0, "no message offered to the network twice")
      assert.strictEqual(result.attempts_recorded_twice, 0, "no webhook attempt recorded twice")
      assert.strictEqual(result.sentTwice, 0)
    },
    240_000
  )
})
