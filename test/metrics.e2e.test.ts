/**
 * Every process serves `/metrics` on its own listener when `METRICS_PORT` is set: the standalone
 * process (embedded database), and on real Postgres an api node and a runner, each scraped and
 * parsed strictly. The public port never serves it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { seededDataDir } from "@switchboard/db/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, READY_DEADLINE_MS, startService, waitFor, waitUntilUp } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"
import { parse, total } from "./support/PrometheusParser.js"

const scrape = async (port: number) => {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`)
  assert.strictEqual(response.status, 200)
  return parse(await response.text())
}

describe("the standalone process", () => {
  let service: ServiceProcess
  let metricsPort: number
  let dataDir: string

  beforeAll(async () => {
    // already migrated: the first start from nothing is test/quickstart.test.ts's
    dataDir = await seededDataDir(mkdtempSync(join(tmpdir(), "sb-metrics-")))
    metricsPort = await freePort()
    service = startService("standalone", { DATA_DIR: dataDir, METRICS_PORT: String(metricsPort) }, await freePort())
    await waitUntilUp(service, "/ready", 120_000)
  }, 150_000)

  afterAll(async () => {
    const code = await service?.stop()
    rmSync(dataDir, { recursive: true, force: true })
    assert.strictEqual(code, 0)
  })

  it(
    "serves /metrics on METRICS_PORT (loopback), with the cluster's, the pool's and the requests' series",
    async () => {
      const metrics = await scrape(metricsPort)
      assert.isAbove(
        total(metrics, "switchboard_http_requests_total", { route: "/ready", method: "GET", status: "200" }),
        0
      )
      assert.strictEqual(total(metrics, "effect_cluster_shards"), 300, "the single runner holds every shard")
      assert.strictEqual(total(metrics, "switchboard_db_pool_max"), 1, "the embedded database has one connection")
      assert.include(service.output(), `metrics are served at http://127.0.0.1:${metricsPort}/metrics`)
      const publicReply = await fetch(`${service.baseUrl}/metrics`)
      assert.strictEqual(publicReply.status, 404)
    },
    30_000
  )
})

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("an api node and a runner", () => {
  const processes: Array<ServiceProcess> = []
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let ports: Array<number> = []

  beforeAll(async () => {
    database = await e2eDatabase(url!, "metrics")
    const env = { DATABASE_URL: database.url, LOG_LEVEL: "warn" }
    // runner cluster port, runner HTTP (unused), api HTTP, runner metrics, api metrics
    ports = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()])
    processes.push(startService("runner", {
      ...env,
      HOST: "127.0.0.1",
      PORT: String(ports[0]),
      METRICS_PORT: String(ports[3])
    }, ports[1]!))
    processes.push(startService("api", { ...env, METRICS_PORT: String(ports[4]) }, ports[2]!))
  }, 60_000)

  afterAll(async () => {
    const codes = await Promise.all(processes.map((p) => p.stop()))
    await database?.drop()
    assert.deepStrictEqual(codes, [0, 0], "every process exits cleanly on SIGTERM")
  }, 90_000)

  it(
    "each serves its own /metrics: the runner its shards, entities and sweeps; the api node its requests",
    async () => {
      await waitFor(`http://127.0.0.1:${ports[2]}/ready`, READY_DEADLINE_MS, 200, processes[1])
      const runner = await scrape(ports[3]!)
      assert.strictEqual(total(runner, "effect_cluster_shards"), 300, "the only runner holds every shard")
      assert.isAtLeast(total(runner, "effect_cluster_singletons"), 1)
      assert.strictEqual(total(runner, "switchboard_db_pool_max"), 10)
      // the sweepers run on the runner, every second
      let sweeps = 0
      for (let i = 0; i < 40 && sweeps === 0; i++) {
        sweeps = total(await scrape(ports[3]!), "switchboard_sweeper_runs_total", { sweeper: "messages", result: "ok" })
        if (sweeps === 0) await new Promise((r) => setTimeout(r, 250))
      }
      assert.isAbove(sweeps, 0)
      const api = await scrape(ports[4]!)
      assert.isAbove(total(api, "switchboard_http_requests_total", { route: "/ready", status: "200" }), 0)
      assert.strictEqual(total(api, "effect_cluster_shards"), 0, "an api node holds no shard")
      assert.strictEqual(total(api, "switchboard_sweeper_runs_total"), 0)
      assert.strictEqual((await fetch(`http://127.0.0.1:${ports[2]}/metrics`)).status, 404)
    },
    240_000
  )
})
