/**
 * The deployment files cannot rot: docker-compose.yml's services run here with their own commands
 * and environment (deploy/entrypoint.sh, NODE_ENV=production, secrets as `.env.example` names
 * them), only the network addresses replaced (this machine has no Docker engine); the Dockerfile
 * is checked for what an operator relies on.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parse } from "yaml"
import { freePort, startCommand, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const root = resolve(import.meta.dirname, "..")
const read = (file: string) => readFileSync(join(root, file), "utf8")

interface ComposeService {
  readonly command?: ReadonlyArray<string>
  readonly environment?: Record<string, string>
  readonly build?: unknown
}
const compose = parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, ComposeService> }

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
        /^(JWT_SECRET|API_KEY_PEPPER|SECRETS_ENCRYPTION_KEY|POSTGRES_PASSWORD)=/.test(l)
      )
    ) {
      assert.match(line, /=$/, line)
    }
  })

  it("builds one image that runs every role as an unprivileged user and stops on SIGTERM", () => {
    const dockerfile = read("Dockerfile")
    assert.match(dockerfile, /npm install --omit=dev/)
    assert.match(dockerfile, /^USER node$/m)
    assert.match(dockerfile, /^STOPSIGNAL SIGTERM$/m)
    assert.match(dockerfile, /^HEALTHCHECK .*deploy\/healthcheck\.mjs/m)
    assert.match(dockerfile, /^ENTRYPOINT \["\/app\/deploy\/entrypoint\.sh"\]$/m)
    for (const [, from] of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const path of from!.split(" ")) assert.isTrue(existsSync(join(root, path)), `${path} exists`)
    }
    const roles = Object.values(compose.services).filter((s) => s.build !== undefined).map((s) => s.command?.[0])
    assert.deepStrictEqual([...new Set(roles)].sort(), ["api", "runner"])
    const unknown = spawnSync("sh", ["deploy/entrypoint.sh", "nonsense"], { cwd: root, encoding: "utf8" })
    assert.strictEqual(unknown.status, 64)
    assert.match(unknown.stderr, /usage: <api\|runner\|standalone\|admin>/)
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
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString("base64")
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
    for (const p of processes) {
      const check = spawnSync(process.execPath, ["deploy/healthcheck.mjs"], { cwd: root, env: p.env, encoding: "utf8" })
      assert.strictEqual(check.status, 0, `${p.name}: ${check.stderr}`)
    }
    for (const p of processes) assert.notInclude(p.process.output(), "refuses to start", p.name)
  }, 180_000)
})
