/**
 * Inbound QR messages across a crash, in the real topology (an api node and runners as separate
 * processes, real Postgres) against the fake WhatsApp server: a photo is recorded and its
 * download is under way when every runner is killed with SIGKILL; texts sent meanwhile wait at
 * WhatsApp. A new runner takes over: the photo is stored byte-identical with one
 * `message.received`, and the texts arrive (offline delivery), each once. Real Postgres only.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { resolve } from "node:path"
import pg from "pg"
import { FakeWhatsApp } from "./fake-whatsapp/index.js"
import { admin, call, freePort, READY_DEADLINE_MS, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"

const url = testDatabaseUrl()
const PASSWORD = "correct horse battery staple"
const trustFakeWhatsApp = resolve(import.meta.dirname, "qr", "trustFakeWhatsApp.ts")

const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

describe.skipIf(url === undefined)("QR inbound across a crash of every runner", () => {
  const processes: Array<ServiceProcess> = []
  let api: ServiceProcess | undefined
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let db: pg.Client
  let wa: FakeWhatsApp
  let env: Record<string, string>

  const startRunner = async () => {
    const [cluster, http] = await Promise.all([freePort(), freePort()])
    const runner = startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(cluster) }, http!, [
      trustFakeWhatsApp
    ])
    processes.push(runner)
    return runner
  }

  beforeAll(async () => {
    wa = await FakeWhatsApp.start({ phoneNumber: "+15550006666" })
    database = await e2eDatabase(url!, "qrinbound")
    db = new pg.Client({ connectionString: database.url })
    await db.connect()
    env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: "info",
      QR_WEBSOCKET_URL: wa.url,
      QR_RECONNECT_BASE_DELAY: "100 millis",
      QR_RECONNECT_MAX_DELAY: "1 second",
      TEST_FAKE_WHATSAPP_ROOT: Buffer.from(wa.rootPublicKey).toString("base64")
    }
    await startRunner()
    const apiPort = await freePort()
    api = startService("api", { ...env, LOG_LEVEL: "error" }, apiPort!)
    processes.push(api)
    await waitFor(`${api.baseUrl}/ready`, READY_DEADLINE_MS).catch((error) => {
      throw new Error(`${error}\n${processes.map((p) => p.output()).join("\n---\n").slice(-3000)}`)
    })
  }, 240_000)

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await db?.end()
    await wa?.stop()
    await database?.drop()
  }, 90_000)

  it(
    "stores the photo whose download a crash cut short, with one event, and delivers the texts sent meanwhile once",
    async () => {
      const base = api!.baseUrl
      const created = await admin([
        "create-user",
        "--email",
        "qrin@example.com",
        "--password",
        PASSWORD,
        "--name",
        "Q",
        "--workspace",
        "Q",
        "--verified"
      ], { DATABASE_URL: database!.url })
      const login = await call(base, "POST", "/v1/auth/login", {
        body: { email: "qrin@example.com", password: PASSWORD }
      })
      const auth = { token: login.body.access_token as string, workspace: created.workspace_id as string }
      const channel = await call(base, "POST", "/v1/channels", { ...auth, body: { provider: "qr", name: "Main" } })
      assert.strictEqual(channel.status, 201, channel.text)
      const channelId = channel.body.id as string

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

      const contact = wa.contact("+4915112340055")
      const inbound = async () =>
        (await call(base, "GET", `/v1/messages?direction=inbound&channel_id=${channelId}&limit=100`, auth)).body
          .data as Array<
            { id: string; type: string; text: { body: string }; media: { id: string; status: string } | null }
          >

      // a photo: recorded at once, its download held at the media host
      wa.media.holdDownloads()
      // it starts as a JPEG does: the media check reads the signature (docs/API.md "Media")
      const photo = randomBytes(250_000)
      Buffer.from([0xff, 0xd8, 0xff]).copy(photo)
      await Effect.runPromise(contact.sendsMedia("image", photo, { mimetype: "image/jpeg" }))
      await until("the photo recorded, pending", async () => (await inbound()).some((m) => m.type === "image"), 60_000)
      await until("its download under way", () => wa.media.downloads.some((d) => d.status === 0), 60_000)
      const [recorded] = await inbound()
      assert.strictEqual(recorded!.media!.status, "pending")

      // every runner dies; texts sent now wait at WhatsApp for the device
      wa.holdLogins()
      for (const p of processes.filter((p) => p !== api)) p.child.kill("SIGKILL")
      await until("the device offline", () => !wa.companionOnline, 15_000)
      const texts = ["sent during the crash", "and one more"]
      for (const text of texts) await Effect.runPromise(contact.says(text))
      wa.media.releaseDownloads()
      wa.releaseLogins()
      await startRunner()

      await until("the photo stored", async () => {
        const m = (await inbound()).find((m) => m.type === "image")
        return m?.media?.status === "ready"
      }, 120_000)
      await until("the texts", async () => (await inbound()).filter((m) => m.type === "text").length >= 2, 120_000)
      const all = await inbound()
      assert.sameMembers(all.filter((m) => m.type === "text").map((m) => m.text.body), texts)
      const image = all.find((m) => m.type === "image")!
      const content = await fetch(`${base}/v1/media/${image.media!.id}/content`, {
        headers: { authorization: `Bearer ${auth.token}`, "x-workspace-id": auth.workspace }
      })
      assert.strictEqual(content.status, 200)
      assert.isTrue(Buffer.from(await content.arrayBuffer()).equals(photo), "the photo's bytes")
      const events = await db.query<{ object_id: string; n: number }>(
        `SELECT object_id, count(*)::int AS n FROM events WHERE type = 'message.received' GROUP BY object_id`
      )
      assert.strictEqual(events.rows.length, 3)
      for (const row of events.rows) assert.strictEqual(row.n, 1, row.object_id)
    },
    300_000
  )
})
