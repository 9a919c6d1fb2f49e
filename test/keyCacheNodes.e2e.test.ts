/**
 * The API key cache across processes (docs/API.md): two api nodes and a runner on one Postgres
 * and one Redis, with a 10-minute cache TTL so only an invalidation can explain a refusal. A key
 * used on both nodes (both cache it) and revoked through node A is refused by node B at once; a
 * workspace suspended through the operator CLI is refused by both. Real Postgres and Redis only.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { testRedisUrl } from "@switchboard/infra/testing"
import { randomBytes } from "node:crypto"
import { admin, call, freePort, startService, waitUntilUp } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()
const redisUrl = testRedisUrl()

/** Polls `attempt` until it answers `status`, for at most `withinMs`; how long it took. */
const refusedWithin = async (attempt: () => Promise<number>, status: number, withinMs: number) => {
  const start = Date.now()
  for (;;) {
    if ((await attempt()) === status) return Date.now() - start
    if (Date.now() - start > withinMs) throw new Error(`still not ${status} after ${withinMs} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe.skipIf(url === undefined || redisUrl === undefined)("API key cache across api nodes", () => {
  const processes: Array<ServiceProcess> = []
  let a: ServiceProcess
  let b: ServiceProcess
  let env: Record<string, string>
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined

  beforeAll(async () => {
    database = await e2eDatabase(url!, "keycache")
    env = {
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl!,
      REDIS_KEY_PREFIX: `sbk_${randomBytes(4).toString("hex")}:`,
      LOG_LEVEL: "warning",
      JWT_SECRET: "e2e-secret-e2e-secret-e2e-secret",
      API_KEY_PEPPER: "e2e-pepper",
      API_KEY_CACHE_TTL_SECONDS: "600"
    }
    const [runnerPort, runnerHttp, portA, portB] = await Promise.all([freePort(), freePort(), freePort(), freePort()])
    processes.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(runnerPort) }, runnerHttp))
    a = startService("api", env, portA)
    b = startService("api", env, portB)
    processes.push(a, b)
    await Promise.all([waitUntilUp(a), waitUntilUp(b)])
  }, 150_000)

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await database?.drop()
  }, 60_000)

  const signIn = async (email: string) => {
    const created = await admin([
      "create-user",
      "--email",
      email,
      "--password",
      "correct horse battery staple",
      "--name",
      "Ops",
      "--workspace",
      "Ops",
      "--verified"
    ], env)
    const login = await call(a.baseUrl, "POST", "/v1/auth/login", {
      body: { email, password: "correct horse battery staple" }
    })
    assert.strictEqual(login.status, 200)
    return { token: login.body.access_token as string, workspace: created.workspace_id as string }
  }

  const newKey = async (session: { token: string; workspace: string }) => {
    const key = await call(a.baseUrl, "POST", "/v1/api-keys", { ...session, body: { name: "k", mode: "test" } })
    assert.strictEqual(key.status, 201)
    const use = (node: ServiceProcess) =>
      call(node.baseUrl, "GET", "/v1/api-keys", { token: key.body.secret }).then((r) => r.status)
    // used on both nodes, twice: each has it cached
    for (const node of [a, b, a, b]) assert.strictEqual(await use(node), 200)
    return { id: key.body.id as string, use }
  }

  it("refuses a key revoked through node A on node B at once, though B cached it for 10 minutes", async () => {
    const session = await signIn("keys@example.com")
    const key = await newKey(session)
    assert.strictEqual((await call(a.baseUrl, "DELETE", `/v1/api-keys/${key.id}`, session)).status, 200)
    // the pub/sub hop only: the TTL (600 s) cannot explain a refusal within 30 s (a bound that a
    // loaded machine cannot break; the hop itself takes milliseconds)
    const tookB = await refusedWithin(() => key.use(b), 401, 30_000)
    assert.strictEqual(await key.use(a), 401)
    assert.isBelow(tookB, 30_000)
    console.log(`[key cache] node B refused the revoked key ${tookB} ms after the revocation`)
  }, 120_000)

  it("refuses a suspended workspace's cached key on both nodes at once (operator CLI)", async () => {
    const session = await signIn("suspend@example.com")
    const key = await newKey(session)
    await admin(["suspend", "--id", session.workspace], env)
    // as above: far inside the 600 s TTL, so only the pub/sub hop can explain it
    await refusedWithin(() => key.use(a), 401, 30_000)
    await refusedWithin(() => key.use(b), 401, 30_000)
    await admin(["reactivate", "--id", session.workspace], env)
    await refusedWithin(() => key.use(b), 200, 30_000)
  }, 180_000)
})
