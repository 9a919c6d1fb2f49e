/**
 * Soak: `--minutes` of mixed load on one api node and one runner (bench/lib/Stack.ts): sends over
 * sandbox channels (each one accepted, dispatched, receipted and reported to a webhook receiver
 * in this process), message reads and lists. Every `--sample` seconds: heap after a full GC and
 * RSS of both processes (over the inspector: bench/lib/Inspector.ts), their open file
 * descriptors, the database's connections, and the p50/p99 of the sends since the last sample.
 * With `--qr-channels N` (default 1; 0 skips it) QR channels against the fake WhatsApp server
 * pair, send, log out and pair again in a loop, some pairing streams dropped mid-way
 * (bench/lib/QrTrack.ts).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \
 *     flock /tmp/sb-bench.lock npm run bench:soak -- --minutes 30 [--rate 10] [--sample 60]
 */
import { readdirSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { FakeWhatsApp } from "../test/fake-whatsapp/index.js"
import { call } from "../test/support/Processes.js"
import { connectInspector } from "./lib/Inspector.js"
import { numberFlag, percentile, record } from "./lib/Measure.js"
import { qrEnv, qrTrack, trustFakeWhatsApp } from "./lib/QrTrack.js"
import { RECIPIENT, startStack } from "./lib/Stack.js"

const MINUTES = numberFlag("minutes", 30)
const RATE = numberFlag("rate", 10)
const SAMPLE_S = numberFlag("sample", 60)
const QR_CHANNELS = numberFlag("qr-channels", 1)

const log = (line: string) => console.log(`[soak] ${line}`)
const mib = (bytes: number) => Math.round(bytes / 2 ** 20 * 10) / 10
const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length

/** Errors of this bench process itself (a dropped stream's socket, say), counted, not fatal. */
const benchErrors = { count: 0, last: "" }
const onBenchError = (error: unknown) => {
  benchErrors.count++
  benchErrors.last = String(error).slice(0, 200)
  log(`bench process error: ${benchErrors.last}`)
}
process.on("uncaughtException", onBenchError)
process.on("unhandledRejection", onBenchError)

const main = async () => {
  const wa = await FakeWhatsApp.start({ phoneNumber: "+15550009999" })
  const stack = await startStack({
    name: "soak",
    runners: 1,
    sandboxNumbers: 10,
    env: { NODE_OPTIONS: "--inspect=127.0.0.1:0", ...qrEnv(wa) },
    runnerPreload: [trustFakeWhatsApp]
  })
  const received = { count: 0 }
  const sink = createServer((req, res) => {
    received.count++
    req.resume()
    req.on("end", () => res.end("ok"))
  })
  await new Promise<void>((r) => sink.listen(0, "127.0.0.1", () => r()))
  try {
    const hook = await call(stack.baseUrl, "POST", "/v1/webhook-endpoints", {
      token: stack.sessionToken,
      workspace: stack.workspaceId,
      body: { url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`, event_types: ["*"] }
    })
    if (hook.status !== 201) throw new Error(`webhook endpoint: ${hook.text}`)
    const channels = await stack.sandboxChannels(8)
    const inspectors = [await connectInspector(stack.api), await connectInspector(stack.runners[0]!)]
    let latencies: Array<number> = []
    const errors = new Map<number, number>()
    const ids: Array<string> = []
    let n = 0
    let inFlight = 0
    const send = async () => {
      inFlight++
      try {
        await sendOne()
      } finally {
        inFlight--
      }
    }
    const sendOne = async () => {
      const i = n++
      const started = Date.now()
      const reply = await call(stack.baseUrl, "POST", "/v1/messages", {
        token: stack.apiKey,
        body: { to: RECIPIENT, channel_id: channels[i % channels.length], text: { body: `soak ${i}` } }
      }).catch(() => ({ status: 0, body: undefined, text: "" }))
      latencies.push(Date.now() - started)
      if (reply.status === 201) ids.push(reply.body.id)
      else errors.set(reply.status, (errors.get(reply.status) ?? 0) + 1)
      // a read of a recent message and a list page, as a dashboard would
      if (i % 4 === 0 && ids.length > 0) {
        await call(stack.baseUrl, "GET", `/v1/messages/${ids[ids.length - 1]}`, { token: stack.apiKey })
        await call(stack.baseUrl, "GET", "/v1/messages?limit=50", { token: stack.apiKey })
      }
    }
    const tick = setInterval(() => void send(), 1000 / RATE)
    let running = true
    const qr = await qrTrack(stack, wa, QR_CHANNELS, () => running)
    const samples: Array<Record<string, number>> = []
    const started = Date.now()
    while (Date.now() - started < MINUTES * 60_000) {
      await new Promise((r) => setTimeout(r, SAMPLE_S * 1000))
      const [api, runner] = await Promise.all(inspectors.map((i) => i.memoryAfterGc()))
      const connections = (await stack.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()"
      )).rows[0]!.n
      const sample = {
        minute: Math.round((Date.now() - started) / 6_000) / 10,
        api_heap_mib: mib(api!.heapUsed),
        api_rss_mib: mib(api!.rss),
        runner_heap_mib: mib(runner!.heapUsed),
        runner_rss_mib: mib(runner!.rss),
        api_fds: fds(stack.api.child.pid!),
        runner_fds: fds(stack.runners[0]!.child.pid!),
        db_connections: connections,
        sends: latencies.length,
        p50_ms: percentile(latencies, 50),
        p99_ms: percentile(latencies, 99),
        webhooks_received: received.count,
        qr_paired: qr.counts.paired,
        qr_failures: qr.counts.failures,
        wa_sockets: wa.openConnections,
        bench_errors: benchErrors.count
      }
      latencies = []
      samples.push(sample)
      log(JSON.stringify(sample))
    }
    clearInterval(tick)
    running = false
    await qr.done
    // the last sends finish, then their dispatch and receipts (a minute at most)
    while (inFlight > 0) await new Promise((r) => setTimeout(r, 100))
    const unreadNow = async () =>
      (await stack.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM messages WHERE direction = 'outbound' AND status <> 'read' AND channel_id = ANY($1)",
        [channels]
      )).rows[0]!.n
    const drainStarted = Date.now()
    let unread = await unreadNow()
    while (unread > 0 && Date.now() - drainStarted < 60_000) {
      await new Promise((r) => setTimeout(r, 1000))
      unread = await unreadNow()
    }
    console.log(record("soak", {
      minutes: MINUTES,
      rate: RATE,
      accepted: ids.length,
      refused: Object.fromEntries(errors),
      not_read_at_end: unread,
      qr: qr.counts,
      bench_process_errors: benchErrors,
      samples
    }))
    for (const i of inspectors) i.close()
  } finally {
    await new Promise<void>((r) => sink.close(() => r()))
    await stack.stop()
    await wa.stop()
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(2)
})
