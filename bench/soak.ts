/**
 * Soak: `--minutes` of mixed load on one api node and one runner (bench/lib/Stack.ts): sends over
 * sandbox channels (each one accepted, dispatched, receipted and reported to a webhook receiver
 * in this process), message reads and lists. Every `--sample` seconds: heap after a full GC and
 * RSS of both processes (over the inspector: bench/lib/Inspector.ts), their open file
 * descriptors, the database's connections, and the p50/p99 of the sends since the last sample.
 * With `--qr-channels N` (default 1; 0 skips it) QR channels against the fake WhatsApp server
 * pair, send, log out and pair again in a loop, some pairing streams dropped mid-way
 * (bench/lib/QrTrack.ts). Every other send carries an `Idempotency-Key`.
 *
 * Whether the queue, lease and lock tables keep their cost without vacuum (issue 57 item 4,
 * bench/RESULTS.md 16): every sample also records, for each hot table (`HOT`: the current
 * partition of messages, of their timeline, of events and of webhook deliveries, where the
 * newest row is; `cluster_locks`, the shard leases, and @effect/cluster's other tables;
 * `idempotency_keys`; `channel_queue_counts`; `sandbox_deliveries`), its live and dead rows
 * (`pg_stat_user_tables`), its size with indexes and TOAST (`pg_total_relation_size`) and the
 * buffers its heap and indexes were touched per send (`pg_statio_user_tables`); the
 * CPU of this database's Postgres backends per send since the last sample (bench/lib/PgCpu.ts:
 * autovacuum workers and the server's shared processes not counted) and the buffers touched per
 * send (`pg_stat_database`, every statement of the database: sweeps, dispatches and receipts
 * included); and whether vacuum may run on the tables (`autovacuum`: the server's setting and
 * the tables' own `autovacuum_enabled`). `--autovacuum off` turns it off for this database's hot
 * tables whatever the server says (`ALTER TABLE ... SET (autovacuum_enabled = off)`, each
 * partition). At the end, the first sample against the last, each figure.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \
 *     flock /tmp/sb-bench.lock npm run bench:soak -- --minutes 30 [--rate 10] [--sample 60] [--autovacuum off]
 */
import { readdirSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import type pg from "pg"
import { FakeWhatsApp } from "../test/fake-whatsapp/index.js"
import { call } from "../test/support/Processes.js"
import { connectInspector } from "./lib/Inspector.js"
import { flag, numberFlag, percentile, record } from "./lib/Measure.js"
import { backendCpu, difference } from "./lib/PgCpu.js"
import { qrEnv, qrTrack, trustFakeWhatsApp } from "./lib/QrTrack.js"
import { RECIPIENT, startStack } from "./lib/Stack.js"

const MINUTES = numberFlag("minutes", 30)
const RATE = numberFlag("rate", 10)
const SAMPLE_S = numberFlag("sample", 60)
const QR_CHANNELS = numberFlag("qr-channels", 1)
const AUTOVACUUM_OFF = flag("autovacuum") === "off"

/**
 * The hot tables: partitioned ones by the column their newest row is found by (its partition is
 * the current one), the others as they are.
 */
const HOT: ReadonlyArray<readonly [table: string, newest?: string]> = [
  ["messages", "id"],
  ["message_transitions", "message_id"],
  ["events", "id"],
  ["webhook_deliveries", "id"],
  ["cluster_locks"],
  ["cluster_runners"],
  ["cluster_messages"],
  ["cluster_replies"],
  ["idempotency_keys"],
  ["channel_queue_counts"],
  ["sandbox_deliveries"]
]

const log = (line: string) => console.log(`[soak] ${line}`)
const mib = (bytes: number) => Math.round(bytes / 2 ** 20 * 10) / 10
const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length

/** Each hot table's (or current partition's) live and dead rows and size, keyed by table. */
const hotTables = async (db: pg.Client) => {
  const relations = new Map<string, string>()
  for (const [table, newest] of HOT) {
    const exists = await db.query("SELECT to_regclass($1) IS NOT NULL AS ok", [table])
    if (!exists.rows[0].ok) continue
    if (newest === undefined) {
      relations.set(table, table)
      continue
    }
    const row = await db.query<{ part: string }>(
      `SELECT tableoid::regclass::text AS part FROM ${table} ORDER BY ${newest} DESC LIMIT 1`
    )
    if (row.rows[0] !== undefined) relations.set(table, row.rows[0].part)
  }
  const stats = await db.query<
    { relname: string; live: string; dead: string; bytes: string; blocks: string; enabled: boolean }
  >(
    `SELECT s.relname, s.n_live_tup AS live, s.n_dead_tup AS dead, pg_total_relation_size(s.relid) AS bytes,
       io.heap_blks_hit + io.heap_blks_read + coalesce(io.idx_blks_hit + io.idx_blks_read, 0) AS blocks,
       coalesce(NOT ('autovacuum_enabled=false' = ANY (c.reloptions) OR 'autovacuum_enabled=off' = ANY (c.reloptions)), true) AS enabled
     FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid JOIN pg_statio_user_tables io ON io.relid = s.relid
     WHERE s.relname = ANY($1)`,
    [[...relations.values()]]
  )
  const byName = new Map(stats.rows.map((r) => [r.relname, r]))
  const result: Record<
    string,
    { relation: string; live: number; dead: number; mib: number; blocks: number; autovacuum: boolean }
  > = {}
  for (const [table, relation] of relations) {
    const r = byName.get(relation)
    if (r === undefined) continue
    result[table] = {
      relation,
      live: Number(r.live),
      dead: Number(r.dead),
      mib: mib(Number(r.bytes)),
      blocks: Number(r.blocks),
      autovacuum: r.enabled
    }
  }
  return result
}

/** `autovacuum_enabled = off` on every hot table of this database (each leaf of a partitioned one). */
const turnAutovacuumOff = async (db: pg.Client) => {
  for (const [table] of HOT) {
    const leaves = await db.query<{ name: string }>(
      `SELECT relid::regclass::text AS name FROM pg_partition_tree(to_regclass($1)) WHERE isleaf`,
      [table]
    )
    // a table that is not partitioned has no tree: itself
    const names = leaves.rows.length > 0 ? leaves.rows.map((r) => r.name) : [table]
    for (const name of names) await db.query(`ALTER TABLE ${name} SET (autovacuum_enabled = off)`)
  }
}

const databaseBlocks = async (db: pg.Client) =>
  Number(
    (await db.query<{ n: string }>(
      "SELECT blks_hit + blks_read AS n FROM pg_stat_database WHERE datname = current_database()"
    )).rows[0]!.n
  )

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
        body: { to: RECIPIENT, channel_id: channels[i % channels.length], text: { body: `soak ${i}` } },
        // every other send with a key, as a client retrying safely would (the idempotency keys table)
        ...(i % 2 === 0 ? { headers: { "idempotency-key": `soak-${process.pid}-${i}` } } : {})
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
    const serverAutovacuum = (await stack.db.query<{ autovacuum: string }>("SHOW autovacuum")).rows[0]!.autovacuum
    if (AUTOVACUUM_OFF) await turnAutovacuumOff(stack.db)
    const owners = { api: stack.api.child.pid!, runner: stack.runners[0]!.child.pid!, bench: process.pid }
    let cpuBefore = await backendCpu(stack.db, owners)
    let blocksBefore = await databaseBlocks(stack.db)
    const tableBlocks = new Map<string, number>()
    for (const t of Object.values(await hotTables(stack.db))) tableBlocks.set(t.relation, t.blocks)
    const samples: Array<Record<string, unknown>> = []
    const started = Date.now()
    while (Date.now() - started < MINUTES * 60_000) {
      await new Promise((r) => setTimeout(r, SAMPLE_S * 1000))
      const [api, runner] = await Promise.all(inspectors.map((i) => i.memoryAfterGc()))
      const cpuNow = await backendCpu(stack.db, owners)
      const blocksNow = await databaseBlocks(stack.db)
      const pgCpu = difference(cpuBefore, cpuNow)
      const sends = latencies.length
      const perSend = (x: number) => sends > 0 ? Math.round(x / sends * 100) / 100 : null
      // per table: buffers touched (heap and indexes, hit or read) per send since the last sample
      const hot = await hotTables(stack.db)
      const tables = Object.fromEntries(
        Object.entries(hot).map(([table, { blocks, ...t }]) => {
          const before = tableBlocks.get(t.relation)
          tableBlocks.set(t.relation, blocks)
          return [table, { ...t, blocks_per_send: before === undefined ? null : perSend(blocks - before) }]
        })
      )
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
        sends,
        p50_ms: percentile(latencies, 50),
        p99_ms: percentile(latencies, 99),
        webhooks_received: received.count,
        qr_paired: qr.counts.paired,
        qr_failures: qr.counts.failures,
        wa_sockets: wa.openConnections,
        bench_errors: benchErrors.count,
        postgres_cpu_ms_per_send: perSend((pgCpu["total"] ?? 0) * 1000),
        postgres_cpu_ms_per_send_by_client: Object.fromEntries(
          Object.entries(pgCpu).map(([owner, seconds]) => [owner, perSend(seconds * 1000)])
        ),
        blocks_per_send: perSend(blocksNow - blocksBefore),
        autovacuum: serverAutovacuum,
        tables
      }
      cpuBefore = cpuNow
      blocksBefore = blocksNow
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
    const summary = firstAgainstLast(samples)
    for (const line of summary.lines) log(line)
    console.log(record("soak", {
      label: flag("label") ?? null,
      minutes: MINUTES,
      rate: RATE,
      autovacuum: { server: serverAutovacuum, tables_off: AUTOVACUUM_OFF },
      first_against_last: summary.figures,
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

/** Every number of the first sample against the last (nested ones by path: `tables.messages.dead`). */
const firstAgainstLast = (samples: ReadonlyArray<Record<string, unknown>>) => {
  const flat = (value: unknown, path: string, into: Map<string, number>) => {
    if (typeof value === "number") into.set(path, value)
    else if (value !== null && typeof value === "object") {
      for (const [key, inner] of Object.entries(value)) flat(inner, path === "" ? key : `${path}.${key}`, into)
    }
    return into
  }
  const figures: Record<string, { first: number; last: number; ratio: number | null }> = {}
  const lines: Array<string> = []
  if (samples.length === 0) return { figures, lines }
  const first = flat(samples[0], "", new Map())
  const last = flat(samples[samples.length - 1], "", new Map())
  for (const [path, a] of first) {
    const b = last.get(path)
    if (b === undefined) continue
    const ratio = a !== 0 ? Math.round(b / a * 100) / 100 : null
    figures[path] = { first: a, last: b, ratio }
    lines.push(
      `${path.padEnd(48)} ${String(a).padStart(10)} -> ${String(b).padStart(10)}${ratio === null ? "" : ` (x${ratio})`}`
    )
  }
  return { figures, lines: ["first sample -> last sample:", ...lines] }
}

main().catch((e) => {
  console.error(e)
  process.exit(2)
})
