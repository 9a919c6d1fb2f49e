/**
 * A paused runner (the classic GC pause / VM freeze: `kill -STOP`) for longer than the shard lock
 * expiry (docs/OPERATING.md "A paused runner"): the other runner takes its shards within seconds
 * of the expiry, not when it wakes; after `kill -CONT` the woken runner does nothing for the shards
 * it lost (its decisions are fenced by the shard lease), so every accepted message still reaches
 * `read` once, no webhook attempt is posted or recorded twice, and nothing is lost.
 * Real Postgres only.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import pg from "pg"
import { freePort, READY_DEADLINE_MS, startService, waitFor } from "./support/Processes.js"
import type { ServiceProcess } from "./support/Processes.js"
import { loadWorkspace, sandboxNumbers, send } from "./support/SandboxLoad.js"

const url = testDatabaseUrl()
const CHANNELS = 8
/**
 * longer than the shard lock expiry (8 s, `ClusterSettings`), shorter than the webhook sweeper's
 * stuck limit (20 s: an attempt in flight for longer is handed out again, at least once)
 */
const PAUSE_MS = 16_000
const EXPIRY_S = 8

describe.skipIf(url === undefined)("a runner paused longer than the shard lock expiry", () => {
  const processes: Array<ServiceProcess> = []
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined
  let db: pg.Client
  let api = ""
  let receiver: Server | undefined
  const clusterPorts: Array<number> = []

  beforeAll(async () => {
    database = await e2eDatabase(url!, "paused")
    db = new pg.Client({ connectionString: database.url })
    await db.connect()
    const env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: "error",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      SANDBOX_NUMBERS: sandboxNumbers(CHANNELS)
    }
    for (let i = 0; i < 2; i++) {
      clusterPorts.push(await freePort())
      processes.push(
        startService("runner", { ...env, HOST: "127.0.0.1", PORT: String(clusterPorts[i]) }, await freePort())
      )
    }
    const apiPort = await freePort()
    processes.push(startService("api", env, apiPort))
    api = `http://127.0.0.1:${apiPort}`
    await waitFor(`${api}/ready`, READY_DEADLINE_MS, 200, processes[2]).catch((error) => {
      throw new Error(`${error}\n${processes.map((p) => p.output()).join("\n---\n").slice(-3000)}`)
    })
  }, 240_000)

  afterAll(async () => {
    processes[0]?.child.kill("SIGCONT")
    await new Promise<void>((done) => receiver === undefined ? done() : receiver.close(() => done()))
    receiver?.closeAllConnections()
    await Promise.all(processes.map((p) => p.stop()))
    await db?.end()
    await database?.drop()
  }, 60_000)

  it("hands its shards over within the expiry; once woken it dispatches and delivers nothing twice", async () => {
    // every delivery's POSTs (their attempt numbers), by delivery id
    const posts = new Map<string, Array<string>>()
    receiver = createServer((req, res) => {
      const id = String(req.headers["x-webhook-delivery-id"])
      posts.set(id, [...(posts.get(id) ?? []), String(req.headers["x-webhook-attempt"])])
      req.resume()
      req.on("end", () => res.end("ok"))
    })
    await new Promise<void>((done) => receiver!.listen(0, "127.0.0.1", () => done()))
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
    const { channels, token } = await loadWorkspace(api, database!.url, CHANNELS, hook)

    // both runners hold shards before the pause
    const victim = `127.0.0.1:${clusterPorts[0]}`
    const held = async () =>
      (await db.query<{ shard_id: string }>(
        "SELECT shard_id FROM cluster_locks WHERE address = $1 AND acquired_at >= NOW() - make_interval(secs => $2)",
        [victim, EXPIRY_S]
      )).rows.map((r) => r.shard_id)
    let victimShards: Array<string> = []
    for (let i = 0; i < 60 && victimShards.length === 0; i++) {
      victimShards = await held()
      if (victimShards.length === 0) await new Promise((r) => setTimeout(r, 500))
    }
    assert.isAbove(victimShards.length, 0, "the first runner holds shards")

    // one send per channel per second, from 4 s before the pause to 6 s after it
    const ids: Array<string> = []
    let pausedAt = 0
    let takenOverAt = 0
    const traffic = (async () => {
      const end = Date.now() + 4_000 + PAUSE_MS + 6_000
      let second = 0
      while (Date.now() < end) {
        const tick = Date.now()
        for (const channel of channels) ids.push(await send(api, token, channel, `s${second}`))
        second++
        await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - tick))))
      }
    })()
    await new Promise((r) => setTimeout(r, 4_000))
    processes[0]!.child.kill("SIGSTOP")
    pausedAt = Date.now()
    // the other runner takes every shard of the paused one (its lock rows name the other runner)
    while (Date.now() - pausedAt < PAUSE_MS) {
      const still = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM cluster_locks WHERE address = $1 AND shard_id = ANY($2)",
        [victim, victimShards]
      )
      if (still.rows[0]!.n === 0 && takenOverAt === 0) takenOverAt = Date.now()
      await new Promise((r) => setTimeout(r, 250))
    }
    processes[0]!.child.kill("SIGCONT")
    const continuedAt = Date.now()
    await traffic
    const takeoverS = (takenOverAt - pausedAt) / 1000
    assert.isAbove(takenOverAt, 0, "another runner took the paused runner's shards while it was paused")

    // every accepted message reaches read, each delivered to the handset once
    const deadline = Date.now() + 60_000
    let statuses: Record<string, number> = {}
    while (Date.now() < deadline) {
      const rows = await db.query<{ status: string; n: number }>(
        "SELECT status, count(*)::int AS n FROM messages WHERE direction = 'outbound' GROUP BY status"
      )
      statuses = Object.fromEntries(rows.rows.map((r) => [r.status, r.n]))
      if (statuses["read"] === ids.length) break
      await new Promise((r) => setTimeout(r, 500))
    }
    assert.deepStrictEqual(statuses, { read: ids.length }, "every accepted message reached read (none lost)")
    // the sandbox network counts how often each message was offered to it
    const handset = await db.query<{ n: number; offers: number }>(
      "SELECT count(*)::int AS n, sum(offers)::int AS offers FROM sandbox_deliveries"
    )
    assert.deepStrictEqual(handset.rows[0], { n: ids.length, offers: ids.length }, "none dispatched twice")
    const dispatchedTwice = await db.query(
      `SELECT message_id FROM message_transitions WHERE to_state = 'dispatching'
       GROUP BY message_id HAVING count(*) > 1`
    )
    const timelines = await db.query(
      `SELECT message_id, from_state, to_state, reason, at FROM message_transitions
       WHERE message_id = ANY($1) ORDER BY message_id, at`,
      [dispatchedTwice.rows.map((r) => r.message_id)]
    )
    assert.strictEqual(
      dispatchedTwice.rowCount,
      0,
      `no message taken for a dispatch twice: ${JSON.stringify(timelines.rows)} (paused at ${
        new Date(pausedAt).toISOString()
      })`
    )

    // every channel dispatched while the runner was still paused: the paused runner's channels
    // waited for the takeover, not for the end of the pause
    const resumed = await db.query<{ channel_id: string; first: Date | null }>(
      `SELECT m.channel_id, min(t.at) FILTER (WHERE t.at >= to_timestamp($1 / 1000.0)) AS first
       FROM message_transitions t JOIN messages m ON m.id = t.message_id WHERE t.to_state = 'dispatching'
       GROUP BY m.channel_id`,
      [pausedAt]
    )
    const waits = resumed.rows.map((r) => r.first === null ? Infinity : (r.first.getTime() - pausedAt) / 1000)
    assert.lengthOf(waits, CHANNELS)
    const stallS = Math.max(...waits)
    assert.isBelow(
      stallS,
      (continuedAt - pausedAt) / 1000,
      `every channel dispatched before the paused runner woke (first dispatch after the pause, s: ${waits})`
    )

    // every event delivered; each delivery posted once and its attempt recorded once
    const eventsDeadline = Date.now() + 60_000
    let undelivered: Array<string> = []
    while (Date.now() < eventsDeadline) {
      undelivered = (await db.query<{ id: string }>(
        "SELECT id FROM webhook_deliveries WHERE status <> 'succeeded'"
      )).rows.map((r) => r.id)
      if (undelivered.length === 0) break
      await new Promise((r) => setTimeout(r, 500))
    }
    assert.deepStrictEqual(undelivered, [], "every event was delivered")
    const deliveries = (await db.query<{ id: string }>("SELECT id FROM webhook_deliveries")).rows.map((r) => r.id)
    assert.isAbove(deliveries.length, ids.length * 4, "sent, delivered, read (and queued) events of each message")
    // an attempt in flight for longer than the webhook sweeper's stuck limit (20 s; a pause plus a
    // slow machine) is handed out again as a NEW attempt (at least once, docs/OPERATING.md "A
    // paused runner"); the same attempt is never posted twice
    assert.deepStrictEqual(
      [...posts.entries()].filter(([, attempts]) => new Set(attempts).size !== attempts.length),
      [],
      "no attempt posted twice"
    )
    assert.deepStrictEqual(deliveries.filter((id) => !posts.has(id)), [], "every delivery posted")
    const attemptsTwice = await db.query(
      "SELECT delivery_id, attempt FROM webhook_attempts GROUP BY delivery_id, attempt HAVING count(*) > 1"
    )
    assert.strictEqual(attemptsTwice.rowCount, 0, "no webhook attempt recorded twice")
    console.log(
      `paused runner: ${ids.length} messages, ${victimShards.length} shards taken over in ${takeoverS.toFixed(1)} s, ` +
        `every channel dispatching again within ${stallS.toFixed(1)} s, paused ${
          PAUSE_MS / 1000
        } s; 0 lost, 0 doubled, ${
          [...posts.values()].filter((a) => a.length > 1).length
        } deliveries posted again as a new attempt`
    )
  }, 150_000)
})
