/**
 * The scaled-out topology on real Postgres: one api node and two runner processes. `/ready` on
 * the api node reports the cluster up, and entities answer from BOTH runners (shards spread over
 * them). Real Postgres only: runners coordinate through it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"
import { prepareTemplate, templateName, testDatabaseUrl, withDatabase } from "@switchboard/db/testing"
import { Cluster, Probe } from "@switchboard/entities"
import { Effect, Layer, Redacted, Schedule } from "effect"
import pg from "pg"
import { call, freePort, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()
const database = `sbt_e2e_topology_${process.pid}`

describe.skipIf(url === undefined)("api node + two runners", () => {
  const processes: Array<ServiceProcess> = []
  let dbUrl: string
  let ports: Array<number> = []

  beforeAll(async () => {
    await prepareTemplate(url!)
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
    await client.query(`CREATE DATABASE "${database}" TEMPLATE "${templateName()}"`)
    await client.end()
    dbUrl = withDatabase(url!, database)
    const env = { DATABASE_URL: dbUrl, LOG_LEVEL: "warn" }
    ports = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()])
    processes.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(ports[0]) }, ports[2]!))
    processes.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(ports[1]) }, ports[3]!))
    processes.push(startService("api", env, ports[4]!))
  }, 60_000)

  afterAll(async () => {
    const codes = await Promise.all(processes.map((p) => p.stop()))
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
    await client.end()
    assert.deepStrictEqual(codes, [0, 0, 0], "every process exits cleanly on SIGTERM")
  }, 90_000)

  it("reports the cluster up through the api node", async () => {
    await waitFor(`http://127.0.0.1:${ports[4]}/ready`, 60_000)
    const ready = await call(`http://127.0.0.1:${ports[4]}`, "GET", "/ready")
    assert.strictEqual(ready.body.checks.cluster.status, "up")
    assert.strictEqual(ready.body.checks.database.status, "up")
  }, 90_000)

  it("answers from entities on both runners", async () => {
    const runners = await Effect.gen(function*() {
      const probe = yield* Probe.client
      const answers = yield* Effect.forEach(
        Array.from({ length: 60 }, (_, i) => `probe-${i}`),
        (id) =>
          probe(id).Ping().pipe(
            Effect.catchAllDefect(Effect.fail),
            Effect.retry({ times: 20, schedule: Schedule.spaced("500 millis") })
          ),
        { concurrency: 10 }
      )
      return new Set(answers.map((a) => a.runner))
    }).pipe(
      Effect.provide(Cluster.client.pipe(Layer.provide(Database.layerPostgres(Redacted.make(dbUrl), 2)))),
      Effect.scoped,
      Effect.runPromise
    )
    assert.deepStrictEqual([...runners].sort(), [`127.0.0.1:${ports[0]}`, `127.0.0.1:${ports[1]}`].sort())
  }, 90_000)
})
