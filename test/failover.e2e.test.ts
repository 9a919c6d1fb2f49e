/**
 * Failover of the messaging engine on real Postgres: one api node and two runner processes.
 * Messages are sent to many sandbox channels while one runner is killed with SIGKILL mid-stream.
 * Every accepted message must still reach `read`: none lost, and none delivered twice by the
 * simulated network (one network delivery, one `delivered` transition, one `message.delivered`).
 * Real Postgres only: runners coordinate through it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { prepareTemplate, templateName, testDatabaseUrl, withDatabase } from "@switchboard/db/testing"
import pg from "pg"
import { admin, call, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()
const database = `sb_test_e2e_failover_${process.pid}`
const CHANNELS = 6
const PER_CHANNEL = 8
const RECIPIENT = "+4915112345678"
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.skipIf(url === undefined)("messaging across a runner failure", () => {
  const processes: Array<ServiceProcess> = []
  let victim: ServiceProcess
  let dbUrl: string
  let api: string

  beforeAll(async () => {
    await prepareTemplate(url!)
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
    await client.query(`CREATE DATABASE "${database}" TEMPLATE "${templateName()}"`)
    await client.end()
    dbUrl = withDatabase(url!, database)
    const env = {
      DATABASE_URL: dbUrl,
      LOG_LEVEL: "error",
      JWT_SECRET: "e2e-secret-e2e-secret-e2e-secret",
      API_KEY_PEPPER: "e2e-pepper",
      RETRY_DELAY_SCALE: "0.05",
      SANDBOX_NUMBERS: Array.from({ length: CHANNELS }, (_, i) => `+1555030${String(i).padStart(4, "0")}`).join(",")
    }
    victim = startService("runner", { ...env, HOST: "127.0.0.1", PORT: "47521" }, 47501)
    processes.push(victim)
    processes.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: "47522" }, 47502))
    const apiNode = startService("api", env, 47510)
    processes.push(apiNode)
    api = apiNode.baseUrl
    await waitFor(`${api}/ready`, 90_000)
  }, 120_000)

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()))
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
    await client.end()
  }, 90_000)

  it("brings every accepted message to read once, with a runner killed mid-stream", async () => {
    const created = await admin([
      "create-user",
      "--email",
      "failover@example.com",
      "--password",
      "correct horse battery staple",
      "--name",
      "Failover",
      "--workspace",
      "Failover",
      "--plan",
      "enterprise",
      "--verified"
    ], { DATABASE_URL: dbUrl, JWT_SECRET: "e2e-secret-e2e-secret-e2e-secret", API_KEY_PEPPER: "e2e-pepper" })
    const login = await call(api, "POST", "/v1/auth/login", {
      body: { email: "failover@example.com", password: "correct horse battery staple" }
    })
    const key = await call(api, "POST", "/v1/api-keys", {
      token: login.body.access_token,
      workspace: created.workspace_id,
      body: { name: "failover", mode: "test" }
    })
    const token: string = key.body.secret
    const channels: Array<string> = []
    for (let i = 0; i < CHANNELS; i++) {
      const session = await call(api, "POST", "/v1/sandbox/sessions", { token })
      assert.strictEqual(session.status, 201, session.text)
      const verified = await call(api, "POST", `/v1/sandbox/sessions/${session.body.id}/verify`, {
        token,
        body: { phone_number: RECIPIENT, code: session.body.verification.code }
      })
      assert.strictEqual(verified.status, 200, verified.text)
      channels.push(session.body.channel_id)
    }

    // sends in rounds over every channel; the victim dies after the second round
    const accepted: Array<string> = []
    for (let round = 0; round < PER_CHANNEL; round++) {
      const replies = await Promise.all(channels.map((channel_id) =>
        call(api, "POST", "/v1/messages", {
          token,
          body: { to: RECIPIENT, channel_id, text: { body: `round ${round}` } }
        })
      ))
      for (const reply of replies) {
        assert.strictEqual(reply.status, 201, reply.text)
        accepted.push(reply.body.id)
      }
      if (round === 1) victim.child.kill("SIGKILL")
      await sleep(400)
    }

    // every accepted message reaches read (failover takes ~10 s, an abandoned dispatch ~60 s)
    const client = new pg.Client({ connectionString: dbUrl })
    await client.connect()
    try {
      const deadline = Date.now() + 150_000
      let statuses: Array<{ id: string; status: string }> = []
      while (Date.now() < deadline) {
        statuses = (await client.query("SELECT id, status FROM messages WHERE id = ANY($1)", [accepted])).rows
        if (statuses.length === accepted.length && statuses.every((m) => m.status === "read")) break
        await sleep(1000)
      }
      const notRead = statuses.filter((m) => m.status !== "read")
      assert.strictEqual(statuses.length, accepted.length, "no accepted message lost")
      assert.deepStrictEqual(notRead, [], "every message reached read")

      const network = (await client.query(
        "SELECT message_id, offers, delivered_at FROM sandbox_deliveries WHERE message_id = ANY($1)",
        [accepted]
      )).rows
      assert.strictEqual(network.length, accepted.length, "the network has each message once")
      assert.isTrue(network.every((d) => d.delivered_at !== null))
      const delivered = (await client.query(
        `SELECT message_id, count(*)::int AS n FROM message_transitions
         WHERE message_id = ANY($1) AND to_state = 'delivered' GROUP BY message_id`,
        [accepted]
      )).rows
      assert.strictEqual(delivered.length, accepted.length)
      assert.isTrue(delivered.every((d) => d.n === 1), "one delivered transition per message")
      const events = (await client.query(
        `SELECT object_id, count(*)::int AS n FROM events
         WHERE object_id = ANY($1) AND type = 'message.delivered' GROUP BY object_id`,
        [accepted]
      )).rows
      assert.isTrue(events.length === accepted.length && events.every((e) => e.n === 1), "one message.delivered each")
    } finally {
      await client.end()
    }
  }, 240_000)
})
