/**
 * Production refuses unsafe settings (docs/CONFIGURATION.md "Running in production"): real processes, started as
 * an operator would start them.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { StartupSafety } from "@switchboard/infra"
import { SignJWT } from "jose"
import { adminRun, call, freePort, startCommand, startService, waitUntilUp } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"
import { serviceEntry } from "./support/ServiceBundles.js"

const SAFE = {
  NODE_ENV: "production",
  JWT_SECRET: "production-jwt-secret-0123456789abcdefghij",
  API_KEY_PEPPER: "production-pepper-0123456789abcdefghijklm",
  SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 42).toString("base64"),
  CLUSTER_SECRET: "production-cluster-secret-0123456789abcdefghij"
}

/** Starts a service with `env` alone (not even the tests' cluster secret) and waits for it to exit; its exit code and output. */
const exitOf = async (name: "api" | "runner" | "standalone", env: Record<string, string>) => {
  const service = startCommand([process.execPath, ...serviceEntry(name)], env, await freePort())
  const code = await new Promise<number | null>((done) => {
    if (service.child.exitCode !== null) done(service.child.exitCode)
    else service.child.once("exit", done)
  })
  return { code, output: service.output() }
}

describe("production refuses unsafe settings", () => {
  it("stops an api node with nothing set, listing every problem once and how to fix it", async () => {
    const { code, output } = await exitOf("api", { NODE_ENV: "production" })
    assert.strictEqual(code, 1)
    assert.match(output, /^Switchboard api refuses to start: NODE_ENV=production and 5 unsafe settings:/)
    for (const name of ["JWT_SECRET", "API_KEY_PEPPER", "SECRETS_ENCRYPTION_KEY", "CLUSTER_SECRET", "DATABASE_URL"]) {
      assert.strictEqual(output.split(`. ${name} `).length - 1, 1, name)
    }
    assert.notMatch(output, /\n\s+at /, "no stack trace")
  }, 60_000)

  it("stops a runner that would send webhooks to private addresses, without echoing any value", async () => {
    const { code, output } = await exitOf("runner", {
      ...SAFE,
      DATABASE_URL: "postgres://127.0.0.1:1/none",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      SECRETS_ENCRYPTION_KEY: StartupSafety.DEVELOPMENT_ENCRYPTION_KEY
    })
    assert.strictEqual(code, 1)
    assert.include(output, "2 unsafe settings")
    assert.include(output, "WEBHOOK_ALLOW_PRIVATE_TARGETS is true")
    assert.include(output, "SECRETS_ENCRYPTION_KEY is the development key")
    assert.notInclude(output, StartupSafety.DEVELOPMENT_ENCRYPTION_KEY)
  }, 60_000)

  it("stops a runner without a cluster secret of its own, in one line that names it", async () => {
    const { CLUSTER_SECRET: _, ...withoutSecret } = SAFE
    const { code, output } = await exitOf("runner", { ...withoutSecret, DATABASE_URL: "postgres://127.0.0.1:1/none" })
    assert.strictEqual(code, 1)
    assert.include(output, "NODE_ENV=production and 1 unsafe setting:")
    assert.include(output, "1. CLUSTER_SECRET is not set (the development default would be used)")
    // the development secret, even listed as a previous one, is refused without being echoed
    const listed = await exitOf("runner", {
      ...SAFE,
      DATABASE_URL: "postgres://127.0.0.1:1/none",
      CLUSTER_SECRET: `${SAFE.CLUSTER_SECRET},${StartupSafety.DEVELOPMENT_CLUSTER_SECRET}`
    })
    assert.strictEqual(listed.code, 1)
    assert.include(listed.output, "1. CLUSTER_SECRET holds the development default")
    assert.notInclude(listed.output, StartupSafety.DEVELOPMENT_CLUSTER_SECRET)
    assert.notInclude(listed.output, SAFE.CLUSTER_SECRET)
  }, 60_000)

  it("stops the operator CLI in production too, but its help needs nothing and warns of nothing", async () => {
    const refused = await adminRun(["set-plan", "--workspace", "ws_x", "--plan", "free"], { NODE_ENV: "production" })
    assert.strictEqual(refused.code, 1)
    assert.include(refused.err, "Switchboard admin refuses to start")
    const help = await adminRun(["--help"], {})
    assert.strictEqual(help.code, 0)
    assert.match(help.out, /^Usage: npm run admin/)
    assert.strictEqual(help.err, "", "no warning on --help")
  }, 60_000)
})

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("a production-configured api node", () => {
  let api: ServiceProcess
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let env: Record<string, string>

  beforeAll(async () => {
    database = await e2eDatabase(url!, "production")
    env = { ...SAFE, DATABASE_URL: database.url, REDIS_URL: process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379" }
    api = startService("api", { ...env, LOG_LEVEL: "warning" }, await freePort())
    // no runner: sign-in needs none (`/ready` would wait for the cluster)
    await waitUntilUp(api, "/health", 120_000)
  }, 150_000)

  afterAll(async () => {
    await api?.stop()
    await database?.drop()
  }, 60_000)

  it("refuses a token signed with the development secret and accepts the same claims signed with its own", async () => {
    const created = await adminRun([
      "create-user",
      "--email",
      "prod@example.com",
      "--password",
      "correct horse battery staple",
      "--name",
      "Prod",
      "--workspace",
      "Prod",
      "--verified"
    ], env)
    assert.strictEqual(created.code, 0, created.err)
    const login = await call(api.baseUrl, "POST", "/v1/auth/login", {
      body: { email: "prod@example.com", password: "correct horse battery staple" }
    })
    assert.strictEqual(login.status, 200)
    const claims = JSON.parse(Buffer.from(login.body.access_token.split(".")[1], "base64url").toString())
    const sign = (secret: string) =>
      new SignJWT({ sid: claims.sid })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setSubject(claims.sub)
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(secret))
    const forged = await call(api.baseUrl, "GET", "/v1/auth/me", {
      token: await sign(StartupSafety.DEVELOPMENT_JWT_SECRET)
    })
    assert.strictEqual(forged.status, 401)
    assert.strictEqual(forged.body.error.code, "UNAUTHORIZED")
    const genuine = await call(api.baseUrl, "GET", "/v1/auth/me", { token: await sign(SAFE.JWT_SECRET) })
    assert.strictEqual(genuine.status, 200)
  }, 60_000)

  it("logs no development warning", () => {
    assert.notInclude(api.output(), "never in production")
  })
})

describe.skipIf(url === undefined)("a development process", () => {
  it("warns of each development default once, says where it listens and when it stops", async () => {
    const database = await e2eDatabase(url!, "devwarnings")
    const standalone = startService("standalone", {
      DATABASE_URL: database.url,
      REDIS_URL: process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true"
    }, await freePort())
    try {
      await waitUntilUp(standalone, "/ready", 120_000)
      const output = standalone.output()
      for (const name of ["JWT_SECRET", "API_KEY_PEPPER", "SECRETS_ENCRYPTION_KEY", "WEBHOOK_ALLOW_PRIVATE_TARGETS"]) {
        const lines = output.split("\n").filter((l) => l.includes(`"${name} `))
        assert.strictEqual(lines.length, 1, `${name}: ${lines.join(" / ")}`)
      }
      // one line with the addresses to open, and one when it stops
      assert.include(output, `Switchboard is listening: API ${standalone.baseUrl}, docs ${standalone.baseUrl}/docs`)
      assert.strictEqual(await standalone.stop(), 0)
      assert.include(standalone.output(), "Switchboard is stopping")
    } finally {
      await standalone.stop()
      await database.drop()
    }
  }, 150_000)
})
