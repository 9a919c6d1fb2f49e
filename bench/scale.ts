/**
 * The cost of one operation as the data grows: one send, one dispatch, one inbound message and
 * one webhook delivery, with 10k, 100k and 1M rows already in each of messages, events,
 * webhook_deliveries, contacts and conversations (cloned in SQL from real rows, lib/ScaleSeed.ts),
 * ALL in one database and one stack: the sizes are compared within one run (ratios), the rows
 * grown between them.
 *
 * One api node, one runner, `--channels` (10) verified sandbox channels (2 msg/s each), one
 * webhook endpoint subscribed to `conversation.note_added` only (nothing else in the run emits
 * it) on a local sink answering 200. At each size, `--reps` (3) times, each op for `--seconds` (20):
 * - send: `POST /v1/messages` at `--send-rate` (30/s, autocannon, 20 connections), round robin
 *   over the channels. The runner dispatches meanwhile (20/s): the backlog left feeds the next op.
 * - dispatch: no sends; the runner works the backlog (the window ends after `--seconds` or once
 *   the queue is empty). Ops = messages whose `-> dispatching` timeline row falls in the window; p99 = the 99th percentile gap between two dispatches of
 *   one channel (500 ms at 2 msg/s). Then the queue is left to drain.
 * - inbound: `POST /v1/sandbox/sessions/:id/inbound` (text) at `--inbound-rate` (20/s).
 * - webhook: `--webhook-rate` (50/s) outbox writes from this process (`EventsRepo.append`, the
 *   write every writer makes); p99 = from the event's `created_at` to its POST at the sink.
 *
 * - idle (first at each rep): nothing asked for `--seconds`: the background work's cost per second
 *   (sweeps, shard locks, metrics). Every op is also reported less what its seconds cost idle
 *   (`marginal_*`): on a loaded machine an op phase completes few ops, and the background's
 *   constant cost per second would otherwise dominate the cost per op.
 *
 * Per op: CPU ms of the api node and of the runner per op (`cpu_ms_per_op`: the process doing the
 * op, api for send and inbound, runner for dispatch and webhook), Postgres CPU per op of the
 * backends of THIS database held by that process (lib/PgCpu.ts; `postgres_cpu_ms_per_op`), p99, and
 * rows read by sequential scans per op and table (`pg_stat_user_tables`), and buffers touched per op
 * (`blocks_per_op`: the whole database, `pg_stat_database`; `blocks_per_op_by_table`: heap and
 * indexes of each table, `pg_statio_user_tables`), which count work and do not move with the
 * machine's load; `blocks_read_per_op`: those of them not found in shared buffers. With
 * `pg_stat_statements` preloaded on the server, `statements`: the twelve statements that took the
 * most time in the phase, each with its calls per op, time and buffers (hit, read) per call. One
 * JSON line per op, size and rep in bench/results/scale.jsonl.
 *
 *   npm run bench:scale -- [--sizes 10000,100000,1000000] [--reps 3] [--seconds 15] [--keep]
 *
 * `--ladder [send,dispatch,inbound,webhook]`: the traffic ladder instead (docs/SCALING.md), on the
 * first size's rows: each op's rate stepped up by `--ladder-factor` (1.5) from its start
 * (`--ladder-send` 10/s, `--ladder-dispatch` 4/s, `--ladder-inbound` 10/s, `--ladder-webhook` 25/s),
 * `--seconds` a step, at most `--ladder-steps` (8), until its p99 passes its bound
 * (`--p99-bound-ms` 500 for send and inbound, `--dispatch-bound-ms` 2000 from a message's creation
 * to its dispatch, `--webhook-bound-ms` 2000 from an event to its POST) or fewer than 90% of the
 * asked ops complete. Dispatches are asked of one channel per 2 msg/s (their pace), up to
 * `--channels`. Per step: achieved ops/s, p99, CPU seconds per second of the api node, the runner
 * and this database's Postgres backends (which one is saturated names the bottleneck), Postgres
 * CPU, WAL bytes (the server's, so other databases' writes count too) and blocks read from the OS
 * per op. One JSON line per step (`scale-ladder`). Short:
 *
 *   npm run bench:scale -- --sizes 10000 --ladder send --seconds 5 --ladder-steps 2
 *
 * `--keep` leaves the database (its URL is printed) for EXPLAIN after the run (a test run's
 * global setup drops `sbt_*` databases whose process has ended: rename it to keep it longer).
 * `--seed-only` grows the tables through `--sizes` and measures nothing: how long each table's
 * growth took, one JSON line per table and size in bench/results/scale-seed.jsonl (its insert
 * rows a second, index builds, `VACUUM ANALYZE`). For 10M rows (bench/RESULTS.md 16):
 *
 *   npm run bench:scale -- --sizes 10000,10000000 --reps 3 --seconds 40 --keep
 */
import { SqlClient } from "@effect/sql"
import { Database, EventsRepo } from "@switchboard/db"
import { Events, Ids } from "@switchboard/domain"
import autocannon from "autocannon"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { admin, call } from "../test/support/Processes.js"
import { cpuSeconds, flag, numberFlag, percentile, record, summarize } from "./lib/Measure.js"
import { backendCpu, difference } from "./lib/PgCpu.js"
import { grow, type Growth, type Templates } from "./lib/ScaleSeed.js"
import { RECIPIENT, startStack } from "./lib/Stack.js"

const sizes = String(flag("sizes") ?? "10000,100000,1000000").split(",").map(Number)
const reps = numberFlag("reps", 3)
const seconds = numberFlag("seconds", 20)
const channelCount = numberFlag("channels", 10)
const sendRate = numberFlag("send-rate", 30)
const inboundRate = numberFlag("inbound-rate", 20)
const webhookRate = numberFlag("webhook-rate", 50)
const label = flag("label") ?? null
const LADDER_OPS = ["send", "dispatch", "inbound", "webhook"] as const
type LadderOp = (typeof LADDER_OPS)[number]
const ladder: ReadonlyArray<LadderOp> = flag("ladder") === true
  ? LADDER_OPS
  : typeof flag("ladder") === "string"
  ? String(flag("ladder")).split(",").map((op) => {
    if (!(LADDER_OPS as ReadonlyArray<string>).includes(op)) throw new Error(`--ladder: no op ${op}`)
    return op as LadderOp
  })
  : []
const ladderFactor = numberFlag("ladder-factor", 1.5)
const ladderSteps = numberFlag("ladder-steps", 8)
const ladderStart: Record<LadderOp, number> = {
  send: numberFlag("ladder-send", 10),
  dispatch: numberFlag("ladder-dispatch", 4),
  inbound: numberFlag("ladder-inbound", 10),
  webhook: numberFlag("ladder-webhook", 25)
}
const ladderBound: Record<LadderOp, number> = {
  send: numberFlag("p99-bound-ms", 500),
  dispatch: numberFlag("dispatch-bound-ms", 2000),
  inbound: numberFlag("p99-bound-ms", 500),
  webhook: numberFlag("webhook-bound-ms", 2000)
}
const keep = flag("keep") === true
const seedOnly = flag("seed-only") === true
const TABLES = ["messages", "events", "webhook_deliveries", "contacts", "conversations", "message_transitions"]

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// ---- the sink ----
const arrivals = new Map<string, number>()
const sink = createServer((req, res) => {
  const at = Date.now()
  const eventId = String(req.headers["x-webhook-event-id"])
  req.resume()
  req.on("end", () => {
    if (!arrivals.has(eventId)) arrivals.set(eventId, at)
    res.writeHead(200).end("ok")
  })
})
sink.keepAliveTimeout = 30_000
await new Promise<void>((done) => sink.listen(0, "127.0.0.1", done))
const sinkPort = (sink.address() as AddressInfo).port

const stack = await startStack({ name: "scale", runners: 1, sandboxNumbers: channelCount })
const apiPid = stack.api.child.pid!
const runnerPid = stack.runners[0]!.child.pid!
const owners = { api: apiPid, runner: runnerPid, bench: process.pid }
const runtime = ManagedRuntime.make(
  EventsRepo.EventsRepo.Default.pipe(Layer.provideMerge(Database.layerPostgres(Redacted.make(stack.dbUrl), 8)))
)

const append = () =>
  runtime.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo.EventsRepo
    const conversationId = yield* Ids.newId("cnv")
    const event = yield* sql.withTransaction(events.append({
      workspaceId: stack.workspaceId,
      event: Events.DomainEvent.make("conversation.note_added", {
        object: "conversation",
        object_id: conversationId,
        conversation_id: conversationId,
        channel_id: yield* Ids.newId("ch"),
        contact_id: yield* Ids.newId("cnt"),
        status: "open",
        note_id: yield* Ids.newId("nte"),
        author_type: "api_key",
        author_id: "bench"
      })
    }))
    return { id: event.id, createdAt: Date.parse(event.created_at) }
  }))

/**
 * Per table: rows read by sequential scans, and buffers touched (heap and index, hit or read);
 * `database`: every buffer the database's backends touched. Counts of work, not time: they do
 * not move with the machine's load.
 */
const tableStats = async () => {
  const rows = await stack.db.query(
    // a partitioned table (deliveries, events: docs/OPERATING.md "Partitions and retention") is the sum of its partitions
    `SELECT COALESCE(p.relname, s.relname) AS relname, sum(s.seq_tup_read)::bigint AS seq,
       sum(io.heap_blks_hit + io.heap_blks_read + COALESCE(io.idx_blks_hit, 0) + COALESCE(io.idx_blks_read, 0))::bigint
         AS blocks
     FROM pg_stat_user_tables s JOIN pg_statio_user_tables io USING (relid)
     LEFT JOIN pg_inherits i ON i.inhrelid = s.relid LEFT JOIN pg_class p ON p.oid = i.inhparent
     WHERE COALESCE(p.relname, s.relname) = ANY($1) GROUP BY 1`,
    [TABLES]
  )
  const database = await stack.db.query(
    `SELECT (blks_hit + blks_read)::bigint AS blocks, blks_read::bigint AS read
     FROM pg_stat_database WHERE datname = current_database()`
  )
  return {
    seq: Object.fromEntries(rows.rows.map((r) => [r.relname, Number(r.seq)])) as Record<string, number>,
    blocks: Object.fromEntries(rows.rows.map((r) => [r.relname, Number(r.blocks)])) as Record<string, number>,
    database: Number(database.rows[0].blocks),
    /** of those, the ones not found in shared buffers (read from the OS: its page cache or the disk) */
    databaseRead: Number(database.rows[0].read)
  }
}

/**
 * Per statement of this database (`pg_stat_statements`, when the server preloads it): calls,
 * execution time and buffers found in shared buffers (hit) or read from the OS. Undefined when the
 * extension is not there; the bench measures without it.
 */
const statementsAvailable = await (async () => {
  try {
    await stack.db.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    await stack.db.query("SELECT 1 FROM pg_stat_statements LIMIT 1")
    return true
  } catch {
    return false
  }
})()
console.log(`pg_stat_statements: ${statementsAvailable ? "per statement" : "not preloaded, no per-statement figures"}`)

interface StatementCounts {
  readonly query: string
  readonly calls: number
  readonly ms: number
  readonly hit: number
  readonly read: number
}

const statementStats = async (): Promise<Map<string, StatementCounts> | undefined> => {
  if (!statementsAvailable) return undefined
  const rows = await stack.db.query(
    `SELECT queryid::text AS id, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query, calls::bigint AS calls,
       total_exec_time AS ms, shared_blks_hit::bigint AS hit, shared_blks_read::bigint AS read
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`
  )
  return new Map(
    rows.rows.map((r) => [r.id, {
      query: r.query,
      calls: Number(r.calls),
      ms: Number(r.ms),
      hit: Number(r.hit),
      read: Number(r.read)
    }])
  )
}

/** The statements that took the most time between two snapshots, per op: the first place to look for what grew. */
const topStatements = (
  before: Map<string, StatementCounts> | undefined,
  after: Map<string, StatementCounts> | undefined,
  ops: number
) => {
  if (before === undefined || after === undefined) return undefined
  const changed = [...after].flatMap(([id, a]) => {
    const b = before.get(id) ?? { calls: 0, ms: 0, hit: 0, read: 0 }
    const calls = a.calls - b.calls
    return calls > 0
      ? [{ query: a.query, calls, ms: a.ms - b.ms, hit: a.hit - b.hit, read: a.read - b.read }]
      : []
  })
  return changed.sort((x, y) => y.ms - x.ms).slice(0, 12).map((s) => ({
    query: s.query,
    calls_per_op: Number((s.calls / Math.max(1, ops)).toFixed(3)),
    ms_per_call: Number((s.ms / s.calls).toFixed(4)),
    ms_per_op: Number((s.ms / Math.max(1, ops)).toFixed(4)),
    hit_per_call: Number((s.hit / s.calls).toFixed(1)),
    read_per_call: Number((s.read / s.calls).toFixed(2))
  }))
}

/** CPU of the processes and of this database's backends, and sequential reads, over `run`. */
const measured = async <A>(run: () => Promise<A>) => {
  await stack.db.query("SELECT pg_stat_clear_snapshot()")
  const [api0, runner0, pg0, seq0, statements0] = [
    cpuSeconds(apiPid),
    cpuSeconds(runnerPid),
    await backendCpu(stack.db, owners),
    await tableStats(),
    await statementStats()
  ]
  const started = Date.now()
  const result = await run()
  const elapsed = (Date.now() - started) / 1000
  await sleep(1200) // backends flush their table statistics at most once a second
  await stack.db.query("SELECT pg_stat_clear_snapshot()")
  const sampled = Date.now()
  const [api1, runner1, pg1, seq1, statements1] = [
    cpuSeconds(apiPid),
    cpuSeconds(runnerPid),
    await backendCpu(stack.db, owners),
    await tableStats(),
    await statementStats()
  ]
  return {
    result,
    elapsed,
    /** seconds from the start to the second CPU sample */
    sampledAfter: (sampled - started) / 1000,
    api: api1 - api0,
    runner: runner1 - runner0,
    pg: difference(pg0, pg1),
    seq: Object.fromEntries(TABLES.map((t) => [t, (seq1.seq[t] ?? 0) - (seq0.seq[t] ?? 0)])),
    blocks: Object.fromEntries(TABLES.map((t) => [t, (seq1.blocks[t] ?? 0) - (seq0.blocks[t] ?? 0)])),
    databaseBlocks: seq1.database - seq0.database,
    databaseRead: seq1.databaseRead - seq0.databaseRead,
    statements: (ops: number) => topStatements(statements0, statements1, ops)
  }
}

/** The server's WAL position in bytes (every database of the server writes to it). */
const walPosition = async () =>
  Number((await stack.db.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS b")).rows[0].b)

const fixedRate = (path: (n: number) => string, body: (n: number) => unknown, rate: number) => {
  let n = 0
  const tag = `${process.pid}-${Date.now().toString(36)}`
  return autocannon({
    url: stack.baseUrl,
    connections: 20,
    duration: seconds,
    overallRate: rate,
    timeout: 30,
    requests: [{
      method: "POST",
      setupRequest: (request) => {
        const i = n++
        return {
          ...request,
          path: path(i),
          headers: {
            ...request.headers,
            "content-type": "application/json",
            "idempotency-key": `scale-${tag}-${i}`,
            authorization: `Bearer ${stack.apiKey}`
          },
          body: JSON.stringify(body(i))
        }
      }
    }]
  })
}

const queued = async () =>
  Number(
    // one count per state, each through its own partial index (`messages_queue`,
    // `messages_dispatching`): `status IN (...)` matches neither, and was a sequential scan of the
    // history every 250 ms while the bench watched the backlog (11f)
    (await stack.db.query(
      `SELECT (SELECT count(*) FROM messages WHERE status = 'queued')
         + (SELECT count(*) FROM messages WHERE status = 'dispatching') AS n`
    )).rows[0].n
  )

const waitDrained = async (limitMs = 120_000) => {
  const until = Date.now() + limitMs
  while (Date.now() < until && (await queued()) > 0) await sleep(500)
}

let channels: Array<string> = []
let sessions: Array<string> = []

const ops = {
  // nothing asked of the stack: what its background work (sweeps, shard locks, metrics) costs per
  // SECOND ("ops" = seconds); the op phases below are reported both raw and less this
  idle: async () => {
    const m = await measured(() => sleep(seconds * 1000))
    return { m, count: m.sampledAfter, owner: "runner", p99: Number.NaN, extra: {} }
  },
  send: async (rate = sendRate, over = channels) => {
    const m = await measured(() =>
      fixedRate(() => "/v1/messages", (i) => ({
        to: RECIPIENT,
        channel_id: over[i % over.length],
        text: { body: `scale ${i}` }
      }), rate)
    )
    const count = m.result["2xx"]
    return { m, count, owner: "api", p99: m.result.latency.p99, extra: { non2xx: m.result.non2xx } }
  },
  dispatch: async () => {
    const from = new Date()
    // the window ends after `seconds`, or once the backlog is worked
    const m = await measured(async () => {
      const until = Date.now() + seconds * 1000
      while (Date.now() < until && (await queued()) > 0) await sleep(250)
    })
    const to = new Date(from.getTime() + m.sampledAfter * 1000)
    const rows = await stack.db.query(
      `SELECT m.channel_id, t.at FROM message_transitions t JOIN messages m ON m.id = t.message_id
       WHERE t.to_state = 'dispatching' AND t.at >= $1 AND t.at < $2 ORDER BY m.channel_id, t.at`,
      [from, to]
    )
    const gaps: Array<number> = []
    for (let i = 1; i < rows.rows.length; i++) {
      if (rows.rows[i].channel_id === rows.rows[i - 1].channel_id) {
        gaps.push(rows.rows[i].at.getTime() - rows.rows[i - 1].at.getTime())
      }
    }
    await waitDrained()
    return { m, count: rows.rows.length, owner: "runner", p99: percentile(gaps, 99), extra: { window_s: m.elapsed } }
  },
  inbound: async (rate = inboundRate) => {
    const m = await measured(() =>
      fixedRate(
        (i) => `/v1/sandbox/sessions/${sessions[i % sessions.length]}/inbound`,
        (i) => ({ from: RECIPIENT, text: { body: `inbound ${i}` } }),
        rate
      )
    )
    return { m, count: m.result["2xx"], owner: "api", p99: m.result.latency.p99, extra: { non2xx: m.result.non2xx } }
  },
  webhook: async (rate = webhookRate) => {
    const created = new Map<string, number>()
    const total = Math.round(rate * seconds)
    const m = await measured(async () => {
      const started = Date.now()
      const inFlight = new Set<Promise<void>>()
      for (let issued = 0; issued < total; issued++) {
        const wait = started + (issued * 1000) / rate - Date.now()
        if (wait > 1) await sleep(wait)
        const p: Promise<void> = append().then((e) => void created.set(e.id, e.createdAt)).finally(() =>
          inFlight.delete(p)
        )
        inFlight.add(p)
        if (inFlight.size >= 32) await Promise.race(inFlight)
      }
      await Promise.all(inFlight)
      const until = Date.now() + 30_000
      while (Date.now() < until && [...created.keys()].some((id) => !arrivals.has(id))) await sleep(100)
    })
    const latencies = [...created].flatMap(([id, at]) => arrivals.has(id) ? [arrivals.get(id)! - at] : [])
    return {
      m,
      count: latencies.length,
      owner: "runner",
      p99: percentile(latencies, 99),
      extra: { lost: total - latencies.length }
    }
  }
} as const

/**
 * Dispatches asked at `rate` a second: sends at that rate over one channel per 2 msg/s (the
 * sandbox's pace), then the backlog worked. Ops: messages made in the window that were
 * dispatched; p99: from a message's creation to its `-> dispatching`.
 */
const dispatchAt = async (rate: number) => {
  const over = channels.slice(0, Math.max(1, Math.min(channels.length, Math.ceil(rate / 2))))
  const from = new Date()
  const sent = await ops.send(rate, over)
  await waitDrained()
  const to = new Date(from.getTime() + sent.m.elapsed * 1000)
  const rows = await stack.db.query(
    `SELECT extract(epoch FROM t.at - m.created_at) * 1000 AS lag_ms FROM messages m
     JOIN message_transitions t ON t.message_id = m.id AND t.to_state = 'dispatching'
     WHERE m.channel_id = ANY($1) AND m.created_at >= $2 AND m.created_at < $3`,
    [over, from, to]
  )
  const lags = rows.rows.map((r) => Number(r.lag_ms))
  return { m: sent.m, count: lags.length, p99: percentile(lags, 99), extra: { channels: over.length } }
}

/** One step of the ladder: `op` asked at `rate` a second. */
const ladderStep = async (op: LadderOp, rate: number) => {
  const wal0 = await walPosition()
  const { count, extra, m, p99 } = op === "dispatch"
    ? await dispatchAt(rate)
    : op === "send"
    ? await ops.send(rate)
    : op === "inbound"
    ? await ops.inbound(rate)
    : await ops.webhook(rate)
  const wal = (await walPosition()) - wal0
  const span = m.sampledAfter
  const pg = Object.values(m.pg).reduce((a, b) => a + b, 0)
  const per = (v: number) => (count > 0 ? v / count : Number.NaN)
  const achieved = count / m.elapsed
  const broken = p99 > ladderBound[op] ? "latency" : achieved < 0.9 * rate ? "throughput" : null
  // CPU seconds a second of each side: the one near a core (or Postgres near the machine's cores) is what ran out
  const busy = { api: m.api / span, runner: m.runner / span, postgres: pg / span }
  const line = {
    op,
    rows: sizes[0],
    label,
    target_per_s: rate,
    achieved_per_s: Number(achieved.toFixed(1)),
    p99_ms: Number(p99.toFixed(1)),
    bound_ms: ladderBound[op],
    broken,
    cpu_s_per_s: Object.fromEntries(Object.entries(busy).map(([k, v]) => [k, Number(v.toFixed(3))])),
    postgres_cpu_ms_per_op: Number(per(pg * 1000).toFixed(3)),
    wal_bytes_per_op: Math.round(per(wal)),
    blocks_per_op: Number(per(m.databaseBlocks).toFixed(1)),
    blocks_read_per_op: Number(per(m.databaseRead).toFixed(2)),
    ...extra
  }
  console.log(record("scale-ladder", line))
  return { broken, busy, achieved }
}

const runLadder = async () => {
  const summary: Array<string> = []
  for (const op of ladder) {
    let rate = ladderStart[op]
    let last: { rate: number; achieved: number } | undefined
    let verdict = `not broken within ${ladderSteps} steps`
    for (let step = 0; step < ladderSteps; step++) {
      if (op === "dispatch" && rate > 2 * channels.length) {
        verdict = `stopped at ${channels.length} channels' pace (${2 * channels.length}/s): --channels`
        break
      }
      const { achieved, broken, busy } = await ladderStep(op, rate)
      await waitDrained()
      if (broken !== null) {
        const first = Object.entries(busy).sort((a, b) => b[1] - a[1])[0]!
        verdict = `${broken} bound broken at ${rate}/s (achieved ${achieved.toFixed(1)}/s); busiest: ${first[0]} at ${
          first[1].toFixed(2)
        } CPU s/s`
        break
      }
      last = { rate, achieved }
      rate = Math.round(rate * ladderFactor * 10) / 10
    }
    summary.push(`${op.padEnd(8)} last within bound: ${last ? `${last.rate}/s` : "none"}; ${verdict}`)
  }
  console.log("--- ladder")
  for (const line of summary) console.log(line)
}

/** The real rows the history is cloned from. */
const templates = async (endpointId: string): Promise<Templates> => {
  for (let i = 0; i < 20; i++) {
    const sent = await call(stack.baseUrl, "POST", "/v1/messages", {
      token: stack.apiKey,
      body: { to: RECIPIENT, channel_id: channels[i % channels.length], text: { body: `template ${i}` } }
    })
    if (sent.status !== 201) throw new Error(`template send: ${sent.text}`)
  }
  const inbound = await call(stack.baseUrl, "POST", `/v1/sandbox/sessions/${sessions[0]}/inbound`, {
    token: stack.apiKey,
    body: { from: RECIPIENT, text: { body: "template" } }
  })
  if (inbound.status !== 202) throw new Error(`template inbound: ${inbound.text}`)
  for (let i = 0; i < 5; i++) await append()
  const one = async (sql: string, params: Array<unknown> = []) => {
    for (let i = 0; i < 120; i++) {
      const rows = await stack.db.query(sql, params)
      if (rows.rows.length > 0) return rows.rows[0].id as string
      await sleep(500)
    }
    throw new Error(`no template row: ${sql}`)
  }
  return {
    contactId: await one("SELECT id FROM contacts WHERE phone_number = $1", [RECIPIENT]),
    outboundMessageId: await one(
      "SELECT id FROM messages WHERE direction = 'outbound' AND status IN ('delivered', 'read') LIMIT 1"
    ),
    inboundMessageId: await one("SELECT id FROM messages WHERE direction = 'inbound' LIMIT 1"),
    eventId: await one("SELECT id FROM events WHERE type = 'message.queued' LIMIT 1"),
    deliveryId: await one("SELECT id FROM webhook_deliveries WHERE status = 'succeeded' AND endpoint_id = $1 LIMIT 1", [
      endpointId
    ]),
    channelIds: channels
  }
}

try {
  const adminEnv = {
    DATABASE_URL: stack.dbUrl,
    JWT_SECRET: stack.env["JWT_SECRET"]!,
    API_KEY_PEPPER: stack.env["API_KEY_PEPPER"]!
  }
  await admin(
    ["override", "--workspace", stack.workspaceId, "--entitlement", "webhook_endpoints", "--unlimited"],
    adminEnv
  )
  const endpoint = await call(stack.baseUrl, "POST", "/v1/webhook-endpoints", {
    token: stack.sessionToken,
    workspace: stack.workspaceId,
    body: { url: `http://127.0.0.1:${sinkPort}/hook`, event_types: ["conversation.note_added"] }
  })
  if (endpoint.status !== 201) throw new Error(`endpoint: ${endpoint.text}`)
  channels = await stack.sandboxChannels(channelCount)
  const sessionRows = await stack.db.query(
    "SELECT id, channel_id FROM sandbox_sessions WHERE channel_id = ANY($1) AND status = 'active'",
    [channels]
  )
  const byChannel = new Map(sessionRows.rows.map((r) => [r.channel_id as string, r.id as string]))
  sessions = channels.map((c) => byChannel.get(c)!)
  const t = await templates(endpoint.body.id)
  await waitDrained()
  console.log(`stack up, ${channels.length} channels, templates ${JSON.stringify(t)}`)

  // each table's growth, a JSON line (`scale-seed`): rows inserted a second, index builds, vacuum
  const logGrowth = (from: number, to: number) => (growth: Growth) =>
    console.log(record("scale-seed", { label, from, to, ...growth }))
  const lines: Array<{ op: string; rows: number; cpu: number; pg: number; p99: number; blocks: number }> = []
  let rows = 0
  if (ladder.length > 0) {
    console.log(
      `rows ${sizes[0]}: seeded in ${JSON.stringify(await grow(stack.db, t, 0, sizes[0]!, logGrowth(0, sizes[0]!)))}`
    )
    await runLadder()
  }
  const compared = ladder.length > 0 ? [] : sizes
  for (const size of compared) {
    const seedSeconds = await grow(stack.db, t, rows, size, logGrowth(rows, size))
    rows = size
    console.log(`rows ${size}: seeded in ${JSON.stringify(seedSeconds)}`)
    if (seedOnly) continue
    for (let rep = 1; rep <= reps; rep++) {
      let idle: { api: number; runner: number; pgApi: number; pgRunner: number; blocks: number } | undefined
      for (const [op, run] of Object.entries(ops)) {
        const { count, extra, m, owner, p99 } = await run()
        const per = (s: number) => count > 0 ? (s * 1000) / count : Number.NaN
        const cpu = per(owner === "api" ? m.api : m.runner)
        const pg = per(m.pg[owner] ?? 0)
        const span = m.sampledAfter
        if (op === "idle") {
          idle = {
            api: m.api / span,
            runner: m.runner / span,
            pgApi: (m.pg["api"] ?? 0) / span,
            pgRunner: (m.pg["runner"] ?? 0) / span,
            blocks: m.databaseBlocks / span
          }
        }
        // the op's cost less what the same seconds cost with nothing asked
        const marginal = idle === undefined || op === "idle" ? {} : {
          marginal_cpu_ms_per_op: per(owner === "api" ? m.api - idle.api * span : m.runner - idle.runner * span),
          marginal_postgres_cpu_ms_per_op: per(
            (m.pg[owner] ?? 0) - (owner === "api" ? idle.pgApi : idle.pgRunner) * span
          ),
          marginal_blocks_per_op: per(m.databaseBlocks - idle.blocks * span) / 1000
        }
        const line = {
          op,
          rows: size,
          rep,
          label,
          ops: count,
          ops_per_s: count / m.elapsed,
          cpu_ms_per_op: cpu,
          postgres_cpu_ms_per_op: pg,
          p99_ms: p99,
          api_cpu_ms_per_op: per(m.api),
          runner_cpu_ms_per_op: per(m.runner),
          postgres_cpu_ms_per_op_by_client: Object.fromEntries(Object.entries(m.pg).map(([k, v]) => [k, per(v)])),
          seq_rows_read_per_op: Object.fromEntries(
            Object.entries(m.seq).filter(([, v]) => v > 0).map(([k, v]) => [k, Math.round(v / Math.max(1, count))])
          ),
          blocks_per_op: per(m.databaseBlocks) / 1000,
          blocks_read_per_op: per(m.databaseRead) / 1000,
          ...marginal,
          blocks_per_op_by_table: Object.fromEntries(
            Object.entries(m.blocks).map(([k, v]) => [k, Number((v / Math.max(1, count)).toFixed(1))])
          ),
          ...extra,
          ...(statementsAvailable ? { statements: m.statements(count) } : {})
        }
        lines.push({
          op,
          rows: size,
          cpu: "marginal_cpu_ms_per_op" in marginal ? marginal.marginal_cpu_ms_per_op : cpu,
          pg: "marginal_postgres_cpu_ms_per_op" in marginal ? marginal.marginal_postgres_cpu_ms_per_op : pg,
          p99,
          blocks: "marginal_blocks_per_op" in marginal ? marginal.marginal_blocks_per_op : line.blocks_per_op
        })
        console.log(record("scale", line))
      }
    }
  }
  if (compared.length > 0) {
    console.log(
      `--- medians of ${reps}, marginal (idle: per second): op rows cpu_ms pg_ms p99_ms blocks (ratio to ${sizes[0]})`
    )
  }
  for (const op of compared.length > 0 ? Object.keys(ops) : []) {
    const at = (size: number, key: "cpu" | "pg" | "p99" | "blocks") =>
      summarize(lines.filter((l) => l.op === op && l.rows === size).map((l) => l[key])).median
    for (const size of sizes) {
      const ratio = (key: "cpu" | "pg" | "p99" | "blocks") => (at(size, key) / at(sizes[0]!, key)).toFixed(2)
      console.log(
        `${op.padEnd(8)} ${String(size).padStart(8)}  cpu ${at(size, "cpu").toFixed(2)} (${ratio("cpu")})  pg ${
          at(size, "pg").toFixed(2)
        } (${ratio("pg")})  p99 ${at(size, "p99").toFixed(0)} (${ratio("p99")})  blocks ${
          at(size, "blocks").toFixed(1)
        } (${ratio("blocks")})`
      )
    }
  }
} finally {
  await runtime.dispose()
  if (keep) {
    await Promise.all([stack.api, ...stack.runners].map((p) => p.stop()))
    await stack.db.end()
    console.log(`kept ${stack.dbUrl}`)
  } else await stack.stop()
  sink.close()
}
