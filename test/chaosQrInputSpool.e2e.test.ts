/**
 * Provider input a runner holds while its database is away, across the runner's end
 * (docs/OPERATING.md "Provider input during a database outage"): a runner process whose Postgres
 * is behind a proxy (test/support/PgProxy.ts) and a QR channel paired to the fake WhatsApp server
 * (real Baileys in the runner). Texts arrive while the proxy refuses every connection; the link
 * has acknowledged them to WhatsApp, which never sends them again. Then:
 * - SIGTERM, and Postgres back within the drain bound: the runner records them before its link
 *   closes;
 * - kill -9: the next start records them from the spool.
 * Each text is recorded exactly once, with one `message.received`. Real Postgres only.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Effect } from "effect"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import pg from "pg"
import { type FakeContact, FakeWhatsApp } from "./fake-whatsapp/index.js"
import * as PgProxy from "./support/PgProxy.js"
import { admin, call, freePort, READY_DEADLINE_MS, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"
import { parse, total } from "./support/PrometheusParser.js"

const url = testDatabaseUrl()
const PASSWORD = "correct horse battery staple"
const trustFakeWhatsApp = resolve(import.meta.dirname, "qr", "trustFakeWhatsApp.ts")

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(200)
  }
}

/** The annotations of the log line of `output` that says `message` (the services log JSON, one object a line). */
const logLine = (output: string, message: string): Record<string, unknown> | undefined => {
  for (const line of output.split("\n")) {
    if (!line.includes(message)) continue
    try {
      return (JSON.parse(line) as { annotations?: Record<string, unknown> }).annotations ?? {}
    } catch {
      continue
    }
  }
  return undefined
}

describe.skipIf(url === undefined)("QR input waiting for the database across the runner's end", () => {
  const processes: Array<ServiceProcess> = []
  let runner: ServiceProcess | undefined
  /** The runner's `/metrics` listener (`METRICS_PORT`). */
  let runnerMetrics = 0
  let api: ServiceProcess | undefined
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let proxy: PgProxy.PgProxy | undefined
  let db: pg.Client
  let wa: FakeWhatsApp
  let dataDir: string
  let env: Record<string, string>
  let channelId: string
  let contact: FakeContact

  const startRunner = async (drainTimeout: string) => {
    const [cluster, http, metrics] = await Promise.all([freePort(), freePort(), freePort()])
    runnerMetrics = metrics!
    const runnerUrl = new URL(database!.url)
    runnerUrl.hostname = "127.0.0.1"
    runnerUrl.port = String(proxy!.port)
    runner = startService(
      "runner",
      {
        ...env,
        DATABASE_URL: runnerUrl.toString(),
        HOST: "127.0.0.1",
        PORT: String(cluster),
        METRICS_PORT: String(runnerMetrics),
        PROVIDER_INPUT_DRAIN_TIMEOUT: drainTimeout
      },
      http!,
      [trustFakeWhatsApp]
    )
    processes.push(runner)
    return runner
  }

  /** Rows and `message.received` events per WhatsApp id, straight from the database. */
  const recorded = async (ids: ReadonlyArray<string>) => {
    const rows = await db.query<{ provider_message_id: string; n: number; events: number }>(
      `SELECT m.provider_message_id, count(DISTINCT m.id)::int AS n,
         (SELECT count(*)::int FROM events e WHERE e.type = 'message.received' AND e.object_id = ANY(array_agg(m.id))) AS events
       FROM messages m WHERE m.channel_id = $1 AND m.direction = 'inbound' AND m.provider_message_id = ANY($2)
       GROUP BY m.provider_message_id`,
      [channelId, ids]
    )
    return rows.rows
  }

  /** What the runner holds for the database, as an operator sees it (`switchboard_provider_input_waiting`). */
  const waiting = async () => {
    const response = await fetch(`http://127.0.0.1:${runnerMetrics}/metrics`)
    return total(parse(await response.text()), "switchboard_provider_input_waiting")
  }

  /**
   * Texts sent while the proxy refuses connections, each taken by the runner: it says it waits for
   * the database, and its gauge counts them (a text waiting behind another of its lane has no log
   * line of its own, so the lines are not counted).
   */
  const textsDuringOutage = async (label: string, count: number) => {
    const mark = runner!.output().length
    const ids: Array<string> = []
    for (let i = 0; i < count; i++) ids.push(await Effect.runPromise(contact.says(`${label} ${i}`)))
    await until(
      `the runner holding ${count} texts`,
      async () =>
        runner!.output().slice(mark).includes("inbound message waits for the database") && (await waiting()) >= count,
      30_000
    ).catch(async (error) => {
      const gauge = await waiting().catch((e) => String(e))
      throw new Error(`${error} (the runner's gauge: ${gauge})\n${runner!.output().slice(-4000)}`)
    })
    return ids
  }

  const assertRecordedOnce = async (ids: ReadonlyArray<string>, timeoutMs: number) => {
    await until("the texts recorded", async () => (await recorded(ids)).length === ids.length, timeoutMs)
    // a late second write would come within the webhook/outbox's steps: give it a moment
    await sleep(1_000)
    const rows = await recorded(ids)
    assert.sameMembers(rows.map((r) => r.provider_message_id), [...ids])
    for (const row of rows) {
      assert.strictEqual(row.n, 1, `${row.provider_message_id} recorded ${row.n} times`)
      assert.strictEqual(row.events, 1, `${row.provider_message_id}: ${row.events} message.received`)
    }
  }

  beforeAll(async () => {
    wa = await FakeWhatsApp.start({ phoneNumber: "+15550006868" })
    database = await e2eDatabase(url!, "qrspool")
    proxy = await PgProxy.start(database.url)
    db = new pg.Client({ connectionString: database.url })
    await db.connect()
    dataDir = mkdtempSync(join(tmpdir(), "switchboard-spool-"))
    env = {
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      LOG_LEVEL: "info",
      QR_WEBSOCKET_URL: wa.url,
      QR_RECONNECT_BASE_DELAY: "100 millis",
      QR_RECONNECT_MAX_DELAY: "1 second",
      TEST_FAKE_WHATSAPP_ROOT: Buffer.from(wa.rootPublicKey).toString("base64")
    }
    await startRunner("30 seconds")
    const apiPort = await freePort()
    api = startService("api", { ...env, LOG_LEVEL: "error" }, apiPort!)
    processes.push(api)
    await waitFor(`${api.baseUrl}/ready`, READY_DEADLINE_MS).catch((error) => {
      throw new Error(`${error}\n${processes.map((p) => p.output()).join("\n---\n").slice(-3000)}`)
    })

    const base = api.baseUrl
    const created = await admin([
      "create-user",
      "--email",
      "spool@example.com",
      "--password",
      PASSWORD,
      "--name",
      "S",
      "--workspace",
      "S",
      "--verified"
    ], { DATABASE_URL: database.url })
    const login = await call(base, "POST", "/v1/auth/login", {
      body: { email: "spool@example.com", password: PASSWORD }
    })
    const auth = { token: login.body.access_token as string, workspace: created.workspace_id as string }
    const channel = await call(base, "POST", "/v1/channels", { ...auth, body: { provider: "qr", name: "Main" } })
    assert.strictEqual(channel.status, 201, channel.text)
    channelId = channel.body.id as string
    // pair over the api node's stream: the fake phone scans the first code shown
    const stream = await fetch(`${base}/v1/channels/${channelId}/qr/stream`, {
      headers: { authorization: `Bearer ${auth.token}`, "x-workspace-id": auth.workspace }
    })
    assert.strictEqual(stream.status, 200)
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader()
    const started = await call(base, "POST", `/v1/channels/${channelId}/qr/start`, auth)
    assert.strictEqual(started.status, 200, started.text)
    let text = ""
    let code: string | undefined
    while (code === undefined) {
      const { done, value } = await reader.read()
      if (done) throw new Error(`the stream ended without a code: ${text}`)
      text += value
      const frame = /event: qr\.updated\ndata: (.*)\n/.exec(text)?.[1]
      if (frame) code = JSON.parse(frame).qr as string
    }
    await reader.cancel()
    await Effect.runPromise(wa.phone.scan(code))
    await until(
      "connected",
      async () => (await call(base, "GET", `/v1/channels/${channelId}`, auth)).body.status === "connected",
      60_000
    )
    // a contact whose session the link knows: what it sends during an outage is decrypted without
    // the database (the link's keys are in memory)
    contact = wa.contact("+4915112340066")
    await assertRecordedOnce([await Effect.runPromise(contact.says("hello"))], 60_000)
  }, 300_000)

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop(2_000)))
    await proxy?.close()
    await db?.end()
    await wa?.stop()
    await database?.drop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  }, 90_000)

  it("records on SIGTERM what waits, once Postgres is back within the drain bound", async () => {
    const outage = proxy!.outage(12_000)
    await sleep(200)
    const ids = await textsDuringOutage("before the stop", 3)
    const stopping = runner!.stop(90_000)
    // the runner drains (it waits, bounded by PROVIDER_INPUT_DRAIN_TIMEOUT = 30 s) while Postgres is still away
    await until(
      "the drain under way",
      () => runner!.output().includes("recording provider input before the link closes")
    )
    await outage
    const code = await stopping
    const output = runner!.output()
    assert.notInclude(output, "provider input not recorded before the link closed", output.slice(-3000))
    assert.notStrictEqual(code, null, "the runner ended by itself, not by SIGKILL")
    await assertRecordedOnce(ids, 10_000)
    // recorded: nothing left in the spool
    assert.deepStrictEqual(readdirSync(join(dataDir, "provider-input")).filter((f) => f.endsWith(".jsonl")), [])
  }, 240_000)

  it("records at its next start what waited when the runner was killed with SIGKILL", async () => {
    await startRunner("30 seconds")
    await until("the link up again", () => wa.companionOnline, 180_000)
    await assertRecordedOnce([await Effect.runPromise(contact.says("back again"))], 120_000)
    const outage = proxy!.outage(8_000)
    await sleep(200)
    const ids = await textsDuringOutage("before the kill", 3)
    runner!.child.kill("SIGKILL")
    await until("the runner gone", () => runner!.child.exitCode !== null || runner!.child.signalCode !== null)
    await outage
    assert.strictEqual((await recorded(ids)).length, 0, "nothing was recorded before the kill")
    const next = await startRunner("30 seconds")
    await assertRecordedOnce(ids, 180_000)
    const line = logLine(next.output(), "provider input found in the spool")
    assert.isDefined(line, next.output().slice(-3000))
    // the texts, and whatever else waited with them (a receipt, a key write's status)
    assert.isAtLeast(line!["replayed"] as number, 3, JSON.stringify(line))
    await until(
      "the spool emptied",
      () => readdirSync(join(dataDir, "provider-input")).filter((f) => f.endsWith(".jsonl")).length === 0,
      10_000
    )
  }, 360_000)
})
