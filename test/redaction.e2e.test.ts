/**
 * Nothing secret reaches the logs: a standalone process at debug level goes
 * through registration, login, refresh, key creation and use, failed attempts and contact
 * searches by phone number and e-mail; then its whole output is searched for every secret and
 * personal value it saw.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { call, freePort, startService, waitUntilUp } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const JWT_SECRET = "redaction-test-jwt-secret-0123456789"
const PEPPER = "redaction-test-pepper-0123456789"
const PASSWORD = "a very secret password 42"
const PHONE = "+4915112345678"
const EMAIL = "searched.person@example.org"

describe("log redaction", () => {
  let service: ServiceProcess
  let dataDir: string

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "sb-redaction-"))
    service = startService("standalone", {
      DATA_DIR: dataDir,
      LOG_LEVEL: "debug",
      JWT_SECRET,
      API_KEY_PEPPER: PEPPER
    }, await freePort())
    await waitUntilUp(service, "/ready", 120_000)
  }, 150_000)

  afterAll(async () => {
    await service?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("never logs passwords, keys, tokens or server secrets", async () => {
    const email = "redaction@example.com"
    const registered = await call(service.baseUrl, "POST", "/v1/auth/register", {
      body: { email, password: PASSWORD, name: "R", workspace_name: "R" }
    })
    assert.strictEqual(registered.status, 201)
    const token = /token: ([A-Za-z0-9_-]+)/.exec(service.output())?.[1]
    assert.isString(token, "the development mailer writes the verification mail to the log")
    assert.strictEqual((await call(service.baseUrl, "POST", "/v1/auth/verify-email", { body: { token } })).status, 200)
    const wrong = await call(service.baseUrl, "POST", "/v1/auth/login", { body: { email, password: `${PASSWORD}!` } })
    assert.strictEqual(wrong.status, 401)
    const login = await call(service.baseUrl, "POST", "/v1/auth/login", { body: { email, password: PASSWORD } })
    assert.strictEqual(login.status, 200)
    const refreshed = await call(service.baseUrl, "POST", "/v1/auth/refresh", {
      body: { refresh_token: login.body.refresh_token }
    })
    assert.strictEqual(refreshed.status, 200)
    const session = { token: refreshed.body.access_token, workspace: registered.body.workspace.id }
    const key = await call(service.baseUrl, "POST", "/v1/api-keys", { ...session, body: { name: "k", mode: "live" } })
    assert.strictEqual(key.status, 201)
    assert.strictEqual((await call(service.baseUrl, "GET", "/v1/api-keys", { token: key.body.secret })).status, 200)
    await call(service.baseUrl, "GET", "/v1/api-keys", { token: `${key.body.secret.slice(0, -1)}x` })
    await call(service.baseUrl, "POST", "/v1/auth/refresh", { body: { refresh_token: login.body.refresh_token } })
    // a contact search by phone number or e-mail: the request log masks query values
    const searched = await call(service.baseUrl, "GET", `/v1/contacts?q=${encodeURIComponent(PHONE)}&limit=5`, {
      token: key.body.secret
    })
    assert.strictEqual(searched.status, 200)
    await call(service.baseUrl, "GET", `/v1/contacts?q=${encodeURIComponent(EMAIL)}`, { token: key.body.secret })

    const logs = service.output()
    assert.include(logs, "Sent HTTP response", "requests are logged at all")
    assert.include(logs, "/v1/contacts?q=*&limit=*", "the search is logged with its query values masked")
    for (
      const [what, secret] of [
        ["password", PASSWORD],
        ["API key secret", key.body.secret],
        ["API key secret body", key.body.secret.slice(8)],
        ["access token", login.body.access_token],
        ["refreshed access token", refreshed.body.access_token],
        ["refresh token", login.body.refresh_token],
        ["rotated refresh token", refreshed.body.refresh_token],
        ["JWT secret", JWT_SECRET],
        ["API key pepper", PEPPER],
        ["searched phone number", PHONE.slice(1)],
        ["searched e-mail", EMAIL],
        ["searched e-mail (encoded)", encodeURIComponent(EMAIL)]
      ] as const
    ) {
      assert.notInclude(logs, secret, `${what} leaked into the logs`)
    }
    for (const line of logs.split("\n").filter((l) => l.trim().startsWith("{"))) {
      JSON.parse(line) // every log line is JSON
    }
  }, 60_000)
})
