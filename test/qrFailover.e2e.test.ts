/**
 * A QR channel in the real topology (an api node and two runners, separate processes, real
 * Postgres) against the fake WhatsApp server: paired over the api node's SSE stream (relayed from
 * the runner that owns the channel), then the owning runner is killed with SIGKILL. The other
 * runner takes the channel over and logs in with the link stored in Postgres: no new QR, never two
 * sockets for the channel at once, and sends keep reaching the contact. Real Postgres only.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Effect } from "effect"
import { resolve } from "node:path"
import { FakeWhatsApp } from "./fake-whatsapp/index.js"
import { admin, call, freePort, READY_DEADLINE_MS, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()
const PASSWORD = "correct horse battery staple"
const trustFakeWhatsApp = resolve(import.meta.dirname, "qr", "trustFakeWhatsApp.ts")

interface Frame {
  readonly event: string
  readonly data: any
}

/** An SSE stream read with fetch: frames as they come, and whether it ended. */
const openStream = async (href: string, headers: Record<string, string>) => {
  const response = await fetch(href, { headers })
  const frames: Array<Frame> = []
  let ended = false
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  void (async () => {
    let buffer = ""
    while (true) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }))
      if (done) break
      buffer += value
      let end = buffer.indexOf("\n\n")
      while (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        end = buffer.indexOf("\n\n")
        const event = /^event: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (event && data) frames.push({ event, data: JSON.parse(data) })
      }
    }
    ended = true
  })()
  return { status: response.status, frames, ended: () => ended }
}

/** What a timed-out wait shows besides its name: the ends of the stack's logs (set by the suite). */
let diagnostics = (): string => ""

/**
 * Waits for `check`; `timeoutMs` is a deadline, not a bound (a pairing through real Baileys and three
 * processes on 2 cores at the load of a full run took over 30 s once), and a timeout shows the logs.
 */
const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 90_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${diagnostics()}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe.skipIf(url === undefined)("QR channel across a runner failover", () => {
  const runners: Array<ServiceProcess> = []
  let api: ServiceProcess | undefined
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let wa: FakeWhatsApp

  beforeAll(async () => {
    wa = await FakeWhatsApp.start({ phoneNumber: "+15550009999" })
    database = await e2eDatabase(url!, "qrfailover")
    const env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: "info",
      QR_WEBSOCKET_URL: wa.url,
      QR_RECONNECT_BASE_DELAY: "100 millis",
      QR_RECONNECT_MAX_DELAY: "1 second",
      TEST_FAKE_WHATSAPP_ROOT: Buffer.from(wa.rootPublicKey).toString("base64")
    }
    const [c1, c2, h1, h2, apiPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()])
    runners.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(c1) }, h1!, [trustFakeWhatsApp]))
    runners.push(startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(c2) }, h2!, [trustFakeWhatsApp]))
    api = startService("api", { ...env, LOG_LEVEL: "error" }, apiPort!)
    diagnostics = () =>
      [...runners, api!].map((p, i) =>
        `--- ${i < runners.length ? `runner ${i + 1}` : "api"}\n${p.output().slice(-4000)}`
      )
        .join("\n")
    await waitFor(`${api.baseUrl}/ready`, READY_DEADLINE_MS).catch((error) => {
      throw new Error(`${error}\n${[...runners, api!].map((p) => p.output()).join("\n---\n").slice(-3000)}`)
    })
  }, 240_000)

  afterAll(async () => {
    await Promise.all([...runners, ...(api ? [api] : [])].map((p) => p.stop()))
    await wa?.stop()
    await database?.drop()
  }, 90_000)

  it("keeps the link on the surviving runner: no new QR, never two sockets, sends go on", async () => {
    const base = api!.baseUrl
    const created = await admin([
      "create-user",
      "--email",
      "qr@example.com",
      "--password",
      PASSWORD,
      "--name",
      "Q",
      "--workspace",
      "Q",
      "--verified"
    ], { DATABASE_URL: database!.url })
    const login = await call(base, "POST", "/v1/auth/login", { body: { email: "qr@example.com", password: PASSWORD } })
    const auth = { token: login.body.access_token as string, workspace: created.workspace_id as string }
    const channel = await call(base, "POST", "/v1/channels", { ...auth, body: { provider: "qr", name: "Main" } })
    assert.strictEqual(channel.status, 201, channel.text)
    const channelId = channel.body.id as string

    // pairing over the api node's stream, relayed from whichever runner owns the channel
    const stream = await openStream(`${base}/v1/channels/${channelId}/qr/stream`, {
      authorization: `Bearer ${auth.token}`,
      "x-workspace-id": auth.workspace
    })
    assert.strictEqual(stream.status, 200)
    await until("snapshot", () => stream.frames.length > 0)
    assert.strictEqual(stream.frames[0]!.event, "snapshot")
    const started = await call(base, "POST", `/v1/channels/${channelId}/qr/start`, auth)
    assert.strictEqual(started.status, 200, started.text)
    await until("a QR code", () => stream.frames.some((f) => f.event === "qr.updated"))
    const code = stream.frames.find((f) => f.event === "qr.updated")!.data.qr as string
    await Effect.runPromise(wa.phone.scan(code))
    await until(
      "connected",
      () => stream.frames.some((f) => f.event === "qr.state" && f.data.to_status === "connected")
    )
    await until("the stream to end after connected", () => stream.ended())

    // never more than one socket for the channel, sampled all along
    let most = 0
    const sampler = setInterval(() => (most = Math.max(most, wa.openConnections)), 20)
    try {
      const contact = wa.contact("+4915112340099")
      const first = await call(base, "POST", "/v1/messages", {
        ...auth,
        body: { channel_id: channelId, to: contact.number, text: { body: "before" } }
      })
      assert.strictEqual(first.status, 201, first.text)
      await until("the first text", () => contact.received.some((m) => m.text === "before"))

      // the runner whose logs show the channel's link owns it
      const owner = runners.find((r) => r.output().includes(channelId))
      assert.isDefined(owner, "a runner owns the channel")
      const logins = wa.stats.logins
      const pairings = wa.stats.pairings
      owner!.child.kill("SIGKILL")
      await until("the old socket to drop", () => wa.openConnections === 0)
      await until("a login with the stored link", () => wa.stats.logins > logins)
      await until("one socket again", () => wa.openConnections === 1)

      const second = await call(base, "POST", "/v1/messages", {
        ...auth,
        body: { channel_id: channelId, to: contact.number, text: { body: "after" } }
      })
      assert.strictEqual(second.status, 201, second.text)
      await until("the second text", () => contact.received.some((m) => m.text === "after"))
      assert.strictEqual(wa.stats.pairings, pairings, "no new QR pairing")
      const now = await call(base, "GET", `/v1/channels/${channelId}`, auth)
      assert.strictEqual(now.body.status, "connected")
      assert.notStrictEqual(now.body.status_reason, "connection_replaced")
    } finally {
      clearInterval(sampler)
    }
    assert.strictEqual(most, 1, "at most one socket for the channel at any time")
    // the code was shown on the stream only: never in a log line of any process
    for (const p of [...runners, api!]) assert.notInclude(p.output(), code)
  }, 600_000)
})
