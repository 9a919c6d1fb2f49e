/**
 * QR soak: `--channels` QR channels (default 250) on one runner, paired over the API to one fake
 * WhatsApp server (each a companion of its own), held connected for `--minutes` (default 20), each
 * dropped by the server and reconnected every `--reconnect-every` seconds (default 120; rolling, as
 * each channel's connection ages). Every `--sample` seconds (default 30): the runner's heap after a
 * full GC and its RSS (over the inspector: bench/lib/Inspector.ts), its open file descriptors, the
 * server's open connections and the channels' statuses. Flat when the mean heap and RSS of the last
 * 5 minutes are within 10% of the first 5 minutes' (docs/QR-CHANNELS.md "Baileys faults we defend":
 * a socket once left an AsyncLocalStorage behind for ever).
 *
 * The fake server links every companion to one phone, numbering devices from 7; a device number is
 * one byte in a JID, so one server holds at most 249 companions (the 250th is logged out at its
 * first login): run at most 249 channels, counting pairings retried.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \
 *     flock /tmp/sb-bench.lock npm run bench:qrsoak -- --channels 250 --minutes 20 --reconnect-every 120
 */
import { Effect } from "effect"
import { readdirSync, writeFileSync } from "node:fs"
import { FakeWhatsApp } from "../test/fake-whatsapp/index.js"
import { call } from "../test/support/Processes.js"
import { connectInspector, type MemoryUsage } from "./lib/Inspector.js"
import { flag, numberFlag, record } from "./lib/Measure.js"
import { openStream, qrEnv, trustFakeWhatsApp, until } from "./lib/QrTrack.js"
import { type Stack, startStack } from "./lib/Stack.js"

const CHANNELS = numberFlag("channels", 250)
const MINUTES = numberFlag("minutes", 20)
const RECONNECT_EVERY_S = numberFlag("reconnect-every", 120)
const SAMPLE_S = numberFlag("sample", 30)
/** where to write the runner's log (at `info`) at the end (`--runner-log <file>`) */
const RUNNER_LOG = flag("runner-log") as string | undefined
/** pairings under way at once */
const PAIRING = numberFlag("pair-concurrency", 8)
/** the window compared at each end, minutes */
const WINDOW_MIN = Math.min(5, MINUTES / 2)

const log = (line: string) => console.log(`[qrsoak] ${line}`)
const mib = (bytes: number) => Math.round(bytes / 2 ** 20 * 10) / 10
const mean = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length)

/** Tries `f` up to 10 times, 3 s apart (a loaded runner may not answer an entity call in time). */
const retried = async <A>(what: string, f: () => Promise<A>): Promise<A> => {
  for (let attempt = 1;; attempt++) {
    try {
      return await f()
    } catch (error) {
      if (attempt >= 10) throw error
      log(`${what}: ${String(error).slice(0, 160)}; again`)
      await new Promise((r) => setTimeout(r, 3000))
    }
  }
}

/** A user access token, renewed every 10 minutes (they last 15). */
let session: { token: string; at: number } | undefined
const authOf = async (stack: Stack) => {
  if (session === undefined || Date.now() - session.at > 10 * 60_000) {
    session = { token: session === undefined ? stack.sessionToken : await stack.login(), at: Date.now() }
  }
  return { token: session.token, workspace: stack.workspaceId }
}

/** Creates QR channel `name` and pairs it over the API's SSE stream; its id once `connected`. */
const pair = async (stack: Stack, wa: FakeWhatsApp, name: string): Promise<string> => {
  const auth = await authOf(stack)
  const created = await retried("create", async () => {
    const r = await call(stack.baseUrl, "POST", "/v1/channels", { ...auth, body: { provider: "qr", name } })
    if (r.status !== 201) throw new Error(`qr channel: ${r.status} ${r.text.slice(0, 120)}`)
    return r.body.id as string
  }).catch(async () => {
    // created by an attempt whose answer was lost
    const list = await call(stack.baseUrl, "GET", "/v1/channels?limit=100", auth)
    return (list.body.data as Array<{ id: string; name: string }>).find((c) => c.name === name)!.id
  })
  return await retried(`pairing ${name}`, async () => {
    const stream = await openStream(`${stack.baseUrl}/v1/channels/${created}/qr/stream`, {
      authorization: `Bearer ${auth.token}`,
      "x-workspace-id": stack.workspaceId
    })
    try {
      const started = await call(stack.baseUrl, "POST", `/v1/channels/${created}/qr/start`, auth)
      if (started.status !== 200) throw new Error(`qr/start ${started.status}`)
      await until("a QR code", () => stream.frames.some((f) => f.event === "qr.updated"), 60_000)
      await Effect.runPromise(wa.phone.scan(stream.frames.find((f) => f.event === "qr.updated")!.data.qr as string))
      await until(
        "connected",
        async () => (await call(stack.baseUrl, "GET", `/v1/channels/${created}`, auth)).body?.status === "connected",
        120_000
      )
      return created
    } finally {
      stream.close()
    }
  })
}

const main = async () => {
  const wa = await FakeWhatsApp.start({ phoneNumber: "+15550009898", manyCompanions: true })
  const stack = await startStack({
    name: "qrsoak",
    runners: 1,
    env: qrEnv(wa),
    runnerEnv: () => ({
      NODE_OPTIONS: "--inspect=127.0.0.1:0",
      // the links' openings and closings are info lines
      ...(RUNNER_LOG === undefined ? {} : { LOG_LEVEL: "info" })
    }),
    runnerPreload: [trustFakeWhatsApp]
  })
  try {
    const runner = stack.runners[0]!
    const inspector = await connectInspector(runner)
    const pairingStarted = Date.now()
    const ids: Array<string> = []
    let next = 0
    await Promise.all(Array.from({ length: PAIRING }, async () => {
      while (next < CHANNELS) {
        ids.push(await pair(stack, wa, `qr-soak-${next++}`))
        if (ids.length % 25 === 0) log(`${ids.length} paired`)
      }
    }))
    log(`${ids.length} channels paired in ${Math.round((Date.now() - pairingStarted) / 1000)} s`)

    let dropped = 0
    const roll = setInterval(() => {
      dropped += wa.dropConnectionsOlderThan(RECONNECT_EVERY_S * 1000)
    }, 1000)
    const statuses = async () =>
      Object.fromEntries(
        (await stack.db.query<{ status: string; n: number }>(
          "SELECT status, count(*)::int AS n FROM channels WHERE provider = 'qr' GROUP BY status"
        )).rows.map((r) => [r.status, r.n])
      )
    const samples: Array<Record<string, unknown> & { minute: number; heap_mib: number; rss_mib: number }> = []
    const started = Date.now()
    while (Date.now() - started < MINUTES * 60_000) {
      await new Promise((r) => setTimeout(r, SAMPLE_S * 1000))
      const memory: MemoryUsage = await inspector.memoryAfterGc()
      const sample = {
        minute: Math.round((Date.now() - started) / 6_000) / 10,
        heap_mib: mib(memory.heapUsed),
        rss_mib: mib(memory.rss),
        external_mib: mib(memory.external),
        fds: readdirSync(`/proc/${runner.child.pid!}/fd`).length,
        wa_sockets: wa.openConnections,
        wa_logins: wa.stats.logins,
        reconnects: dropped,
        channels: await statuses()
      }
      samples.push(sample)
      log(JSON.stringify(sample))
    }
    clearInterval(roll)
    const first = samples.filter((s) => s.minute <= WINDOW_MIN)
    const last = samples.filter((s) => s.minute > MINUTES - WINDOW_MIN)
    const change = (key: "heap_mib" | "rss_mib") =>
      Math.round((mean(last.map((s) => s[key])) / mean(first.map((s) => s[key])) - 1) * 1000) / 10
    const heapChange = change("heap_mib")
    const rssChange = change("rss_mib")
    console.log(record("qrsoak", {
      channels: CHANNELS,
      minutes: MINUTES,
      reconnect_every_s: RECONNECT_EVERY_S,
      node: process.version,
      pairing_s: Math.round((Date.now() - pairingStarted) / 1000 - MINUTES * 60),
      reconnects: dropped,
      logins: wa.stats.logins,
      heap_change_pct: heapChange,
      rss_change_pct: rssChange,
      flat: Math.abs(heapChange) <= 10 && Math.abs(rssChange) <= 10,
      samples
    }))
    inspector.close()
  } finally {
    // what the runner said (its links opening and closing), for a run whose logins outnumber its reconnects
    if (RUNNER_LOG !== undefined) writeFileSync(RUNNER_LOG, stack.runners.map((r) => r.output()).join("\n---\n"))
    await stack.stop()
    await wa.stop()
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(2)
})
