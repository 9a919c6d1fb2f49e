/**
 * The Grafana dashboard proven by a real Prometheus (docs/OPERATING.md "Dashboard"): Debian's
 * `prometheus` scrapes an api node and two runners with the compose file's scrape configuration
 * (deploy/prometheus/prometheus.yml; only the addresses and the interval changed), while sandbox
 * sends, a refused send, webhook deliveries and one webhook retry flow. After two scrapes every
 * panel query of deploy/grafana/switchboard.json is evaluated through Prometheus's HTTP API and
 * must return data. The key panels are then drawn from those results in Chromium
 * (`.tmp/dashboard/dashboard.png`, the picture in docs/OPERATING.md). Real Postgres only: the
 * compose topology (api node + runners) needs it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { chromium } from "playwright-core"
import { parse, stringify } from "yaml"
import { dashboardPage, type PanelData } from "./support/DashboardPicture.js"
import { freePort, READY_DEADLINE_MS, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"
import { loadWorkspace, sandboxNumbers, send } from "./support/SandboxLoad.js"

const root = resolve(import.meta.dirname, "..")
const url = testDatabaseUrl()
const PROMETHEUS = process.env["PROMETHEUS_PATH"] ?? "/usr/bin/prometheus"
/** what the dashboard's `$__rate_interval` becomes: Grafana's 4 x the scrape interval, at least a minute */
const RATE_INTERVAL = "1m"

interface Panel {
  readonly title: string
  readonly type: string
  readonly targets?: ReadonlyArray<{ readonly expr: string; readonly legendFormat?: string }>
}

interface Sample {
  readonly metric: Record<string, string>
  readonly value?: [number, string]
  readonly values?: ReadonlyArray<[number, string]>
}

describe.skipIf(url === undefined)(
  url === undefined
    ? "the Grafana dashboard against a real Prometheus: skipped in embedded mode, the api node and runners it scrapes need real Postgres (DATABASE_URL, REDIS_URL)"
    : "the Grafana dashboard against a real Prometheus",
  () => {
    const processes: Array<ServiceProcess> = []
    let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
    let prometheus: ChildProcess | undefined
    let prometheusUrl = ""
    let prometheusOutput = ""
    let receiver: Server | undefined
    const tmp = mkdtempSync(join(tmpdir(), "sbt-prometheus-"))
    let api = ""

    const query = async (path: string, params: Record<string, string>) => {
      const response = await fetch(`${prometheusUrl}${path}?${new URLSearchParams(params)}`)
      const body = await response.json() as { status: string; error?: string; data: { result: Array<Sample> } }
      return { status: response.status, body }
    }

    beforeAll(async () => {
      const version = spawnSync(PROMETHEUS, ["--version"], { encoding: "utf8" })
      assert.strictEqual(
        version.status,
        0,
        `Debian's prometheus is missing (apt-get install prometheus): ${version.error}`
      )
      database = await e2eDatabase(url!, "prometheus")
      const env = {
        DATABASE_URL: database.url,
        LOG_LEVEL: "error",
        RETRY_DELAY_SCALE: "0.01",
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
        SANDBOX_NUMBERS: sandboxNumbers(3),
        METRICS_HOST: "127.0.0.1"
      }
      // the compose file's names: what its Prometheus configuration scrapes
      const metricsPorts: Record<string, number> = {}
      for (const name of ["api", "runner-1", "runner-2"]) metricsPorts[name] = await freePort()
      for (const name of ["runner-1", "runner-2"]) {
        processes.push(startService("runner", {
          ...env,
          HOST: "127.0.0.1",
          PORT: String(await freePort()),
          METRICS_PORT: String(metricsPorts[name])
        }, await freePort()))
      }
      const apiPort = await freePort()
      processes.push(startService("api", { ...env, METRICS_PORT: String(metricsPorts["api"]) }, apiPort))
      api = `http://127.0.0.1:${apiPort}`

      const config = parse(readFileSync(join(root, "deploy/prometheus/prometheus.yml"), "utf8")) as {
        global: Record<string, string>
        scrape_configs: Array<{ static_configs: Array<{ targets: Array<string> }> }>
      }
      config.global["scrape_interval"] = "1s"
      config.global["evaluation_interval"] = "1s"
      for (const job of config.scrape_configs) {
        for (const group of job.static_configs) {
          group.targets = group.targets.map((target) => {
            const port = metricsPorts[target.split(":")[0]!]
            assert.isDefined(port, `${target} is a process of the compose file`)
            return `127.0.0.1:${port}`
          })
        }
      }
      writeFileSync(join(tmp, "prometheus.yml"), stringify(config))
      const prometheusPort = await freePort()
      prometheusUrl = `http://127.0.0.1:${prometheusPort}`
      prometheus = spawn(PROMETHEUS, [
        `--config.file=${join(tmp, "prometheus.yml")}`,
        `--storage.tsdb.path=${join(tmp, "data")}`,
        `--web.listen-address=127.0.0.1:${prometheusPort}`,
        "--log.level=warn"
      ], { stdio: ["ignore", "pipe", "pipe"] })
      prometheus.stdout!.on("data", (d) => (prometheusOutput += d))
      prometheus.stderr!.on("data", (d) => (prometheusOutput += d))
      await waitFor(`${api}/ready`, READY_DEADLINE_MS, 200, processes[2]).catch((error) => {
        throw new Error(`${error}\n${processes.map((p) => p.output()).join("\n---\n").slice(-3000)}`)
      })
      await waitFor(`${prometheusUrl}/-/ready`, 30_000).catch((error) => {
        throw new Error(`${error}\n${prometheusOutput.slice(-2000)}`)
      })
    }, 240_000)

    afterAll(async () => {
      prometheus?.kill("SIGTERM")
      await new Promise<void>((done) => receiver === undefined ? done() : receiver.close(() => done()))
      receiver?.closeAllConnections()
      const codes = await Promise.all(processes.map((p) => p.stop()))
      await database?.drop()
      rmSync(tmp, { recursive: true, force: true })
      assert.deepStrictEqual(codes, [0, 0, 0], "every process exits cleanly on SIGTERM")
    }, 60_000)

    it("evaluates every panel query of the dashboard with data, and draws the key panels", async () => {
      // a webhook receiver that fails each event's first attempt once in a while: retries happen too
      let posts = 0
      receiver = createServer((req, res) => {
        req.resume()
        req.on("end", () => res.writeHead(++posts % 7 === 3 ? 503 : 200).end("ok"))
      })
      await new Promise<void>((done) => receiver!.listen(0, "127.0.0.1", () => done()))
      const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
      const { channels, token } = await loadWorkspace(api, database!.url, 3, hook)

      // 8 s of traffic across the scrapes: sends on every channel, and one refused send per second
      const started = Date.now() / 1000
      for (let second = 0; second < 8; second++) {
        const tick = Date.now()
        for (const channel of channels) await send(api, token, channel, `s${second}`)
        const refused = await fetch(`${api}/v1/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({
            to: "+4915112345678",
            channel_id: "ch_01JXXXXXXXXXXXXXXXXXXXXXXX",
            text: { body: "x" }
          })
        })
        assert.strictEqual(refused.status, 404)
        await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - tick))))
      }
      // two scrapes of every target after the traffic
      const targetsScrapedSince = async (since: number) => {
        const { body } = await query("/api/v1/query", {
          query: `min(timestamp(up == 1))`,
          time: String(Date.now() / 1000)
        })
        const count = await query("/api/v1/query", { query: "count(up == 1)" })
        return Number(count.body.data.result[0]?.value?.[1] ?? 0) === 3 &&
          Number(body.data.result[0]?.value?.[1] ?? 0) > since
      }
      for (let scrape = 0; scrape < 2; scrape++) {
        const since = Date.now() / 1000
        const deadline = Date.now() + 15_000
        while (!(await targetsScrapedSince(since))) {
          assert.isBelow(Date.now(), deadline, `every target scraped (Prometheus: ${prometheusOutput.slice(-1000)})`)
          await new Promise((r) => setTimeout(r, 200))
        }
      }

      const dashboard = JSON.parse(readFileSync(join(root, "deploy/grafana/switchboard.json"), "utf8")) as {
        panels: Array<Panel>
      }
      const now = String(Date.now() / 1000)
      const empty: Array<string> = []
      const instants = new Map<string, Array<Sample>>()
      const pictured: Array<PanelData> = []
      for (const panel of dashboard.panels.filter((p) => p.type !== "row")) {
        const series: Array<PanelData["series"][number]> = []
        for (const target of panel.targets ?? []) {
          const expr = target.expr.replaceAll("$__rate_interval", RATE_INTERVAL)
          const instant = await query("/api/v1/query", { query: expr, time: now })
          assert.strictEqual(instant.body.status, "success", `${panel.title}: ${expr}: ${instant.body.error}`)
          if (instant.body.data.result.length === 0) empty.push(`${panel.title}: ${expr}`)
          instants.set(panel.title, [...(instants.get(panel.title) ?? []), ...instant.body.data.result])
          const range = await query("/api/v1/query_range", {
            query: expr,
            start: String(started - 5),
            end: now,
            step: "1"
          })
          for (const sample of range.body.data.result) {
            series.push({ label: legend(target.legendFormat, sample.metric), points: sample.values ?? [] })
          }
        }
        pictured.push({ title: panel.title, type: panel.type, series })
      }
      assert.deepStrictEqual(empty, [], "every panel query returns data")
      // and the data is the stack's: two healthy runners sharing the 300 shards, sends accepted
      const values = (title: string) => (instants.get(title) ?? []).map((s) => Number(s.value![1]))
      assert.deepStrictEqual(values("Runners healthy"), [2])
      const shards = values("Shards per runner")
      assert.lengthOf(shards, 2, "one series per runner")
      assert.strictEqual(shards[0]! + shards[1]!, 300)
      assert.isAbove(values("Sends accepted / s")[0]!, 0)
      assert.isAbove(values("Webhook success ratio")[0]!, 0)

      const out = join(root, ".tmp", "dashboard")
      mkdirSync(out, { recursive: true })
      const browser = await chromium.launch({
        executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium",
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
      })
      try {
        const page = await browser.newPage({ viewport: { width: 1200, height: 520 } })
        await page.setContent(dashboardPage(pictured, KEY_PANELS))
        const drawn = await page.locator("svg polyline").count()
        assert.isAtLeast(drawn, KEY_PANELS.length, "each key panel draws at least one line")
        await page.screenshot({ path: join(out, "dashboard.png"), fullPage: true })
      } finally {
        await browser.close()
      }
    }, 120_000)
  }
)

/** The panels the picture in docs/OPERATING.md shows. */
const KEY_PANELS = [
  "Requests by status",
  "Latency (all routes)",
  "Message transitions by status",
  "Dispatch lag across channels",
  "Deliveries by outcome",
  "Shards per runner"
]

/** Grafana's legend: `{{label}}` replaced by the series' label values. */
const legend = (format: string | undefined, metric: Record<string, string>) =>
  format === undefined || format === ""
    ? Object.entries(metric).map(([k, v]) => `${k}=${v}`).join(", ") || "value"
    : format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, name: string) => metric[name] ?? "")
