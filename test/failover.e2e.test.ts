/**
 * kill -9 of a runner while many sandbox channels dispatch: every accepted message still reaches
 * `read`, none is lost and none is delivered twice by the simulated network. Real Postgres only.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import pg from "pg"
import { admin, call, freePort, READY_DEADLINE_MS, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()
const CHANNELS = 6
const PER_CHANNEL = 8
const TO = "+4915112345678"

describe.skipIf(url === undefined)("failover of a runner under load", () => {
  const processes: Array<ServiceProcess> = []
  let dbUrl: string
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let db: pg.Client
  let api = ""
  let closeSink: () => Promise<void> = async () => {}

  beforeAll(async () => {
    database = await e2eDatabase(url!, "failover")
    dbUrl = database.url
    db = new pg.Client({ connectionString: dbUrl })
    await db.connect()
    const env = {
      DATABASE_URL: dbUrl,
      LOG_LEVEL: "error",
      RETRY_DELAY_SCALE: "0.01",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      SANDBOX_NUMBERS: Array.from({ length: CHANNELS }, (_, i) => `+1555040000${i}`).join(",")
    }
    const [c1, c2, h1, h2, apiPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()])
    processes.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(c1) }, h1!))
    processes.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(c2) }, h2!))
    processes.push(startService("api", env, apiPort!))
    api = `http://127.0.0.1:${apiPort}`
    await waitFor(`${api}/ready`, READY_DEADLINE_MS).catch((error) => {
      throw new Error(`${error}\n${processes.map((p) => p.output()).join("\n---\n").slice(-3000)}`)
    })
  }, 240_000)

  afterAll(async () => {
    await closeSink()
    await Promise.all(processes.map((p) => p.stop()))
    await db?.end()
    await database?.drop()
  }, 90_000)

  it("loses nothing and delivers nothing twice when a runner is killed mid-stream", async () => {
    const env = { DATABASE_URL: dbUrl }
    const created = await admin([
      "create-user",
      "--email",
      "load@example.com",
      "--password",
      "correct horse battery staple",
      "--name",
      "L",
      "--workspace",
      "L",
      "--verified"
    ], env)
    await admin([
      "override",
      "--workspace",
      created.workspace_id,
      "--entitlement",
      "shared_test_sessions",
      // the whole pool: an operator's number is honoured as given (unlimited is half the pool)
      "--value",
      String(CHANNELS)
    ], env)
    const login = await call(api, "POST", "/v1/auth/login", {
      body: { email: "load@example.com", password: "correct horse battery staple" }
    })
    const key = await call(api, "POST", "/v1/api-keys", {
      token: login.body.access_token,
      workspace: created.workspace_id,
      body: { name: "k", mode: "test" }
    })
    const token = key.body.secret as string
    // every event of the workspace also goes to a webhook receiver in this process
    const seen = new Set<string>()
    const sink = createServer((req, res) => {
      seen.add(String(req.headers["x-webhook-event-id"]))
      req.resume()
      req.on("end", () => res.end("ok"))
    })
    await new Promise<void>((r) => sink.listen(0, "127.0.0.1", () => r()))
    closeSink = () => new Promise<void>((r) => sink.close(() => r()))
    const hookKey = await call(api, "POST", "/v1/api-keys", {
      token: login.body.access_token,
      workspace: created.workspace_id,
      body: { name: "hooks", mode: "test", scopes: ["webhooks.manage"] }
    })
    const hook = await call(api, "POST", "/v1/webhook-endpoints", {
      token: hookKey.body.secret,
      body: { url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`, event_types: ["*"] }
    })
    assert.strictEqual(hook.status, 201, hook.text)
    const channels: Array<string> = []
    for (let i = 0; i < CHANNELS; i++) {
      const session = await call(api, "POST", "/v1/sandbox/sessions", { token })
      assert.strictEqual(session.status, 201, session.text)
      await call(api, "POST", `/v1/sandbox/sessions/${session.body.id}/verify`, {
        token,
        body: { phone_number: TO, code: session.body.verification.code }
      })
      channels.push(session.body.channel_id)
    }
    const ids: Array<string> = []
    for (let round = 0; round < PER_CHANNEL; round++) {
      for (const channel_id of channels) {
        const sent = await call(api, "POST", "/v1/messages", {
          token,
          body: { to: TO, channel_id, text: { body: `r${round}` } }
        })
        assert.strictEqual(sent.status, 201, sent.text)
        ids.push(sent.body.id)
      }
      if (round === 2) processes[0]!.child.kill("SIGKILL")
    }
    const deadline = Date.now() + 120_000
    let statuses: Record<string, number> = {}
    while (Date.now() < deadline) {
      const rows = await db.query<{ status: string; n: number }>(
        "SELECT status, count(*)::int AS n FROM messages WHERE direction = 'outbound' GROUP BY status"
      )
      statuses = Object.fromEntries(rows.rows.map((r) => [r.status, r.n]))
      if (statuses["read"] === ids.length) break
      await new Promise((r) => setTimeout(r, 500))
    }
    assert.deepStrictEqual(statuses, { read: ids.length }, "every accepted message reached read")
    const handset = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM sandbox_deliveries")
    assert.strictEqual(handset.rows[0]!.n, ids.length, "each message was delivered to the handset once")
    const sentTwice = await db.query(
      "SELECT object_id FROM events WHERE type = 'message.sent' GROUP BY object_id HAVING count(*) > 1"
    )
    assert.strictEqual(sentTwice.rowCount, 0, "no message reported sent twice")
    // and every event reached the webhook receiver (at least once)
    const webhookDeadline = Date.now() + 90_000
    let events: Array<string> = []
    while (Date.now() < webhookDeadline) {
      events = (await db.query<{ id: string }>("SELECT id FROM events WHERE NOT is_test")).rows.map((r) => r.id)
      if (events.every((id) => seen.has(id))) break
      await new Promise((r) => setTimeout(r, 500))
    }
    assert.deepStrictEqual(events.filter((id) => !seen.has(id)), [], "every event was delivered")
    // a receiver sees a request before its outcome is recorded: give the records a moment
    let unfinished = await db.query("SELECT id, status FROM webhook_deliveries WHERE status <> 'succeeded'")
    for (let i = 0; i < 60 && (unfinished.rowCount ?? 0) > 0; i++) {
      await new Promise((r) => setTimeout(r, 500))
      unfinished = await db.query("SELECT id, status FROM webhook_deliveries WHERE status <> 'succeeded'")
    }
    assert.strictEqual(unfinished.rowCount, 0, JSON.stringify(unfinished.rows))
  }, 180_000)
})
