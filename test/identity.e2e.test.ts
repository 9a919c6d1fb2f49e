/**
 * Two api processes on one Postgres: revoking a key or logging out on one node is seen by the
 * other at once (without Redis the API key cache is off on a shared Postgres; with it,
 * test/keyCacheNodes.e2e.test.ts). Real Postgres only (the embedded database belongs to one process).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { admin, call, freePort, startService, waitUntilUp } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("identity across api nodes", () => {
  let a: ServiceProcess
  let b: ServiceProcess
  let dbUrl: string
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined

  beforeAll(async () => {
    database = await e2eDatabase(url!, "identity")
    dbUrl = database.url
    const env = {
      DATABASE_URL: dbUrl,
      LOG_LEVEL: "warning",
      JWT_SECRET: "e2e-secret-e2e-secret-e2e-secret",
      API_KEY_PEPPER: "e2e-pepper"
    }
    a = startService("api", env, await freePort())
    b = startService("api", env, await freePort())
    await Promise.all([waitUntilUp(a), waitUntilUp(b)])
  }, 150_000)

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await database?.drop()
  }, 60_000)

  it("sees a revocation and a logout made on the other node at once", async () => {
    const created = await admin([
      "create-user",
      "--email",
      "ops@example.com",
      "--password",
      "correct horse battery staple",
      "--name",
      "Ops",
      "--workspace",
      "Ops",
      "--verified"
    ], { DATABASE_URL: dbUrl, JWT_SECRET: "e2e-secret-e2e-secret-e2e-secret", API_KEY_PEPPER: "e2e-pepper" })
    assert.match(created.user_id, /^usr_/)
    const login = await call(a.baseUrl, "POST", "/v1/auth/login", {
      body: { email: "ops@example.com", password: "correct horse battery staple" }
    })
    assert.strictEqual(login.status, 200)
    const session = { token: login.body.access_token, workspace: created.workspace_id }
    const key = await call(a.baseUrl, "POST", "/v1/api-keys", { ...session, body: { name: "k", mode: "test" } })
    assert.strictEqual(key.status, 201)
    assert.strictEqual((await call(b.baseUrl, "GET", "/v1/api-keys", { token: key.body.secret })).status, 200)
    assert.strictEqual((await call(a.baseUrl, "DELETE", `/v1/api-keys/${key.body.id}`, session)).status, 200)
    const afterRevoke = await call(b.baseUrl, "GET", "/v1/api-keys", { token: key.body.secret })
    assert.strictEqual(afterRevoke.status, 401)

    assert.strictEqual((await call(b.baseUrl, "GET", "/v1/auth/me", session)).status, 200)
    assert.strictEqual((await call(a.baseUrl, "POST", "/v1/auth/logout", session)).status, 204)
    assert.strictEqual((await call(b.baseUrl, "GET", "/v1/auth/me", session)).status, 401)
  }, 60_000)
})
