/**
 * The scaled-out topology on real Postgres: one api node and two runner processes. `/ready` on
 * the api node reports the cluster up, and entities answer from BOTH runners (shards spread over
 * them). Real Postgres only: runners coordinate through it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Cluster, ClusterAuthConfig, ProbeEntity } from "@switchboard/entities"
import { Effect, Layer, Redacted, Schedule } from "effect"
import { call, clusterSecret, freePort, READY_DEADLINE_MS, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("api node + two runners", () => {
  const processes: Array<ServiceProcess> = []
  let dbUrl: string
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let ports: Array<number> = []

  beforeAll(async () => {
    database = await e2eDatabase(url!, "topology")
    dbUrl = database.url
    const env = { DATABASE_URL: dbUrl, LOG_LEVEL: "warn" }
    ports = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()])
    processes.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(ports[0]) }, ports[2]!))
    processes.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(ports[1]) }, ports[3]!))
    processes.push(startService("api", env, ports[4]!))
  }, 60_000)

  afterAll(async () => {
    const codes = await Promise.all(processes.map((p) => p.stop()))
    await database?.drop()
    assert.deepStrictEqual(codes, [0, 0, 0], "every process exits cleanly on SIGTERM")
  }, 90_000)

  it("reports the cluster up through the api node", async () => {
    await waitFor(`http://127.0.0.1:${ports[4]}/ready`, READY_DEADLINE_MS)
    const ready = await call(`http://127.0.0.1:${ports[4]}`, "GET", "/ready")
    assert.strictEqual(ready.body.checks.cluster.status, "up")
    assert.strictEqual(ready.body.checks.database.status, "up")
  }, 240_000)

  it("answers from entities on both runners", async () => {
    // A runner that starts later than the other owns no shards until the shard manager hands it
    // some, so batches of fresh entity ids are pinged until both runners have answered.
    const runners = await Effect.gen(function*() {
      const probe = yield* ProbeEntity.Probe.client
      const seen = new Set<string>()
      for (let batch = 0; batch < 30 && seen.size < 2; batch++) {
        const answers = yield* Effect.forEach(
          Array.from({ length: 60 }, (_, i) => `probe-${batch}-${i}`),
          (id) =>
            probe(id).Ping().pipe(
              Effect.catchAllDefect(Effect.fail),
              Effect.retry({ times: 20, schedule: Schedule.spaced("500 millis") })
            ),
          { concurrency: 10 }
        )
        for (const answer of answers) seen.add(answer.runner)
        if (seen.size < 2) yield* Effect.sleep("2 seconds")
      }
      return seen
    }).pipe(
      Effect.provide(Cluster.client.pipe(
        Layer.provide(Database.layerPostgres(Redacted.make(dbUrl), 2)),
        Layer.provide(ClusterAuthConfig.layer({ secrets: ClusterAuthConfig.secretsOf(clusterSecret) }))
      )),
      Effect.scoped,
      Effect.runPromise
    )
    assert.deepStrictEqual([...runners].sort(), [`127.0.0.1:${ports[0]}`, `127.0.0.1:${ports[1]}`].sort())
  }, 90_000)
})
