/**
 * Benchmark 2: webhook delivery of ONE runner to a local sink answering 200.
 *
 * Events are produced in the bench process with the service's own `EventsRepo.append` (the
 * outbox write every writer makes: event row + one pending delivery per subscribed endpoint, in
 * one transaction) against the stack's database. Endpoints are created, paused and resumed
 * through the API (the session token of the stack's user; `webhook_endpoints` is lifted with the
 * operator CLI).
 *
 * (a) throughput: a backlog is written while the endpoints are paused, then they are resumed
 *     through the API; deliveries/s = deliveries / (last POST - first POST), measured at the sink.
 *     `fanout`: `--endpoints` (100) endpoints x `--fanout-events` (50) events; `backlog`: one
 *     endpoint with `--backlog` (4000) events.
 * (b) latency: `--rate` (200) events/s for `--seconds` (30) to one endpoint, open loop; for each
 *     event the time from its `created_at` (set before its transaction commits) to its POST
 *     arriving at the sink; p50/p99, and events that never arrived.
 *
 * npm run bench:webhooks -- [--runs 3] [--only fanout|backlog|steady] [--profile DIR]
 */
import { SqlClient } from "@effect/sql"
import { Database, EventsRepo } from "@switchboard/db"
import { Events, Ids } from "@switchboard/domain"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { admin, call } from "../test/support/Processes.js"
import { cpuSeconds, flag, formatSummary, numberFlag, percentile, record, summarize } from "./lib/Measure.js"
import { profileEnv } from "./lib/Profile.js"
import { startStack } from "./lib/Stack.js"

const runs = numberFlag("runs", 3)
const only = flag("only")
const endpointCount = numberFlag("endpoints", 100)
const fanoutEvents = numberFlag("fanout-events", 50)
const backlog = numberFlag("backlog", 4000)
const rate = numberFlag("rate", 200)
const seconds = numberFlag("seconds", 30)
const profileDir = flag("profile")
const runs_ = (phase: string) => only === undefined || only === phase

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// ---- the sink: answers 200 at once, remembers when each delivery arrived ----
interface Arrival {
  readonly at: number
  readonly eventId: string
  readonly attempt: string
}
const arrivals = new Map<string, Arrival>()
let duplicates = 0
/** The first duplicates: which attempts arrived twice, and how far apart (a retry, or the same attempt twice). */
const duplicateSamples: Array<{ delivery: string; attempts: string; apart_ms: number }> = []
const sink = createServer((req, res) => {
  const at = Date.now()
  const deliveryId = String(req.headers["x-webhook-delivery-id"])
  const eventId = String(req.headers["x-webhook-event-id"])
  const attempt = String(req.headers["x-webhook-attempt"])
  req.resume()
  req.on("end", () => {
    const first = arrivals.get(deliveryId)
    if (first !== undefined) {
      duplicates++
      if (duplicateSamples.length < 5) {
        duplicateSamples.push({
          delivery: deliveryId,
          attempts: `${first.attempt},${attempt}`,
          apart_ms: at - first.at
        })
      }
    } else arrivals.set(deliveryId, { at, eventId, attempt })
    res.writeHead(200, { "content-type": "text/plain" }).end("ok")
  })
})
sink.keepAliveTimeout = 30_000
await new Promise<void>((done) => sink.listen(0, "127.0.0.1", done))
const sinkPort = (sink.address() as AddressInfo).port

const stack = await startStack({
  name: "webhooks",
  runners: 1,
  env: profileEnv(profileDir)
})
const runnerPid = stack.runners[0]!.child.pid!

const runtime = ManagedRuntime.make(
  EventsRepo.EventsRepo.Default.pipe(Layer.provideMerge(Database.layerPostgres(Redacted.make(stack.dbUrl), 8)))
)

/** One outbox write, exactly as a writer makes it; its id and `created_at` (ms). */
const append = (type: "message.sent" | "message.delivered") =>
  runtime.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo.EventsRepo
    const messageId = yield* Ids.newId("msg")
    const event = yield* sql.withTransaction(events.append({
      workspaceId: stack.workspaceId,
      event: Events.DomainEvent.make(type, {
        object: "message",
        object_id: messageId,
        message_id: messageId,
        from_state: "provider_accepted",
        to_state: type === "message.sent" ? "sent" : "delivered",
        category: "utility"
      })
    }))
    return { id: event.id, createdAt: Date.parse(event.created_at) }
  }))

/** `count` appends, `concurrency` at a time. */
const appendMany = async (type: "message.sent" | "message.delivered", count: number, concurrency = 8) => {
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      next++
      await append(type)
    }
  }))
}

const api = (method: string, path: string, body?: unknown) =>
  call(stack.baseUrl, method, path, {
    token: stack.sessionToken,
    workspace: stack.workspaceId,
    ...(body === undefined ? {} : { body })
  })

const createEndpoint = async (i: number, eventTypes: Array<string>) => {
  const created = await api("POST", "/v1/webhook-endpoints", {
    url: `http://127.0.0.1:${sinkPort}/hook/${i}`,
    event_types: eventTypes
  })
  if (created.status !== 201) throw new Error(`creating endpoint ${i}: ${created.text}`)
  return created.body.id as string
}

const setStatus = async (ids: ReadonlyArray<string>, status: "active" | "paused") => {
  for (let i = 0; i < ids.length; i += 10) {
    await Promise.all(
      ids.slice(i, i + 10).map(async (id) => {
        const updated = await api("PATCH", `/v1/webhook-endpoints/${id}`, { status })
        if (updated.status !== 200) throw new Error(`${status} ${id}: ${updated.text}`)
      })
    )
  }
}

/** Waits until `expected` new deliveries arrived (or nothing arrived for `idleMs`); their arrival times. */
const collect = async (before: ReadonlySet<string>, expected: number, idleMs = 20_000) => {
  let seen = 0
  let lastChange = Date.now()
  while (true) {
    const now = arrivals.size - before.size
    if (now !== seen) {
      seen = now
      lastChange = Date.now()
    }
    if (seen >= expected || Date.now() - lastChange > idleMs) break
    await sleep(50)
  }
  const fresh: Array<Arrival> = []
  for (const [id, arrival] of arrivals) if (!before.has(id)) fresh.push(arrival)
  return fresh
}

const deliveryStates = async () => {
  const rows = await stack.db.query(
    "SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status"
  )
  return Object.fromEntries(rows.rows.map((r) => [r.status, r.n]))
}

/** (a) a paused backlog, resumed: deliveries/s at the sink and runner CPU per delivery. */
const throughput = async (ids: ReadonlyArray<string>, type: "message.sent" | "message.delivered", events: number) => {
  await setStatus(ids, "paused")
  const written = Date.now()
  await appendMany(type, events)
  const writeSeconds = (Date.now() - written) / 1000
  const expected = events * ids.length
  const before = new Set(arrivals.keys())
  const cpu0 = cpuSeconds(runnerPid)
  const resumedAt = Date.now()
  await setStatus(ids, "active")
  const fresh = await collect(before, expected)
  const cpu = cpuSeconds(runnerPid) - cpu0
  const times = fresh.map((a) => a.at)
  const first = Math.min(...times)
  const last = Math.max(...times)
  return {
    endpoints: ids.length,
    events,
    expected,
    delivered: fresh.length,
    write_seconds: writeSeconds,
    per_second: fresh.length / ((last - first) / 1000),
    per_second_from_resume: fresh.length / ((last - resumedAt) / 1000),
    runner_cpu_ms_per_delivery: (cpu * 1000) / Math.max(1, fresh.length)
  }
}

/** (b) a steady stream to one endpoint: creation-to-POST latency. */
const steady = async () => {
  const created = new Map<string, number>()
  const before = new Set(arrivals.keys())
  const total = Math.round(rate * seconds)
  const intervalMs = 1000 / rate
  const cpu0 = cpuSeconds(runnerPid)
  const started = Date.now()
  let issued = 0
  let lateIssues = 0
  const inFlight = new Set<Promise<void>>()
  while (issued < total) {
    const due = started + issued * intervalMs
    const wait = due - Date.now()
    if (wait > 1) await sleep(wait)
    else if (wait < -50) lateIssues++
    const p: Promise<void> = append("message.delivered").then((e) => {
      created.set(e.id, e.createdAt)
    }).finally(() => inFlight.delete(p))
    inFlight.add(p)
    issued++
    if (inFlight.size >= 32) await Promise.race(inFlight)
  }
  await Promise.all(inFlight)
  const produceSeconds = (Date.now() - started) / 1000
  const fresh = await collect(before, total, 15_000)
  const cpu = cpuSeconds(runnerPid) - cpu0
  const latencies = fresh.flatMap((a) => {
    const at = created.get(a.eventId)
    return at === undefined ? [] : [a.at - at]
  })
  return {
    rate,
    seconds,
    events: total,
    achieved_rate: total / produceSeconds,
    late_issues: lateIssues,
    delivered: fresh.length,
    lost: total - fresh.length,
    p50_ms: percentile(latencies, 50),
    p99_ms: percentile(latencies, 99),
    max_ms: Math.max(...latencies),
    runner_cpu_ms_per_delivery: (cpu * 1000) / Math.max(1, fresh.length)
  }
}

try {
  await admin(["override", "--workspace", stack.workspaceId, "--entitlement", "webhook_endpoints", "--unlimited"], {
    DATABASE_URL: stack.dbUrl,
    JWT_SECRET: stack.env["JWT_SECRET"]!,
    API_KEY_PEPPER: stack.env["API_KEY_PEPPER"]!
  })
  const many: Array<string> = []
  for (let i = 0; i < endpointCount; i++) many.push(await createEndpoint(i, ["message.sent"]))
  const one = await createEndpoint(endpointCount, ["message.delivered"])
  if (profileDir) console.log(`runner profile: CPU.${runnerPid}.cpuprofile`)
  console.log(`stack up; ${many.length} + 1 endpoints; sink on :${sinkPort}`)

  const results: Array<Record<string, any>> = []
  for (let run = 1; run <= runs; run++) {
    const result: Record<string, any> = { run }
    if (runs_("fanout")) {
      result["fanout"] = await throughput(many, "message.sent", fanoutEvents)
      console.log(`run ${run} fanout`, JSON.stringify(result["fanout"]))
    }
    if (runs_("backlog")) {
      result["backlog"] = await throughput([one], "message.delivered", backlog)
      console.log(`run ${run} backlog`, JSON.stringify(result["backlog"]))
    }
    if (runs_("steady")) {
      result["steady"] = await steady()
      console.log(`run ${run} steady`, JSON.stringify(result["steady"]))
    }
    result["duplicates_so_far"] = duplicates
    if (duplicateSamples.length > 0) result["duplicate_samples"] = [...duplicateSamples]
    result["delivery_states"] = await deliveryStates()
    results.push(result)
    console.log(record("webhooks", { ...result, label: flag("label") ?? null, profile: profileDir !== undefined }))
  }
  const line = (name: string, get: (r: Record<string, any>) => number, digits = 1) => {
    const values = results.filter((r) => get(r) !== undefined && !Number.isNaN(get(r))).map(get)
    if (values.length > 0) console.log(`${name}: ${formatSummary(summarize(values), digits)}`)
  }
  console.log(`--- ${results.length} runs, medians [min–max]`)
  line("fanout deliveries/s", (r) => r["fanout"]?.per_second)
  line("fanout runner CPU ms/delivery", (r) => r["fanout"]?.runner_cpu_ms_per_delivery, 2)
  line("backlog (1 endpoint) deliveries/s", (r) => r["backlog"]?.per_second)
  line("backlog runner CPU ms/delivery", (r) => r["backlog"]?.runner_cpu_ms_per_delivery, 2)
  line("steady p50 ms", (r) => r["steady"]?.p50_ms, 0)
  line("steady p99 ms", (r) => r["steady"]?.p99_ms, 0)
  line("steady lost", (r) => r["steady"]?.lost, 0)
  console.log(`duplicate POSTs: ${duplicates}`)
} finally {
  await runtime.dispose()
  if (duplicates > 0) {
    // what the runner logged (errors only): why attempts went unrecorded and were handed out again
    const logged = stack.runners[0]!.output().split("\n").filter((l) => l.includes("level=")).slice(0, 10)
    console.log(`runner log (first ${logged.length} lines):\n${logged.map((l) => l.slice(0, 1500)).join("\n")}`)
  }
  await stack.stop()
  sink.close()
}
