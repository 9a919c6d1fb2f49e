/**
 * Chaos scenarios shared by the real-mode tests (test/chaos*.e2e.test.ts) and bench/chaos.ts: a
 * stack of real processes on a private Postgres (and optionally a private Redis), a steady load
 * of sends over sandbox channels with a webhook receiver taking every event, and the accounting
 * afterwards: every accepted message reaches `read`, every event reaches the receiver, no message
 * is reported sent twice.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo, Server } from "node:net"
import { resolve } from "node:path"
import pg from "pg"
import { admin, call, freePort, READY_DEADLINE_MS, startService, waitFor } from "./Processes.js"
import type { ServiceProcess } from "./Processes.js"

export const TO = "+4915112345678"

export interface ChaosStack {
  readonly env: Record<string, string>
  readonly runners: Array<ServiceProcess>
  readonly apis: Array<ServiceProcess>
  readonly token: string
  readonly channels: ReadonlyArray<string>
  /** event ids the webhook receiver got, with how many times */
  readonly seen: Map<string, number>
  /** when the receiver first got each event (ms since the epoch) */
  readonly receivedAt: Map<string, number>
  readonly databaseUrl: string
  /** each runner's cluster address (`HOST:PORT`, as in `cluster_locks`) and its `/metrics` URL */
  readonly runnerInfo: Map<ServiceProcess, { readonly address: string; readonly metricsUrl: string }>
  /** `slowBootMs`: the runner starts starved of CPU for that long (test/support/slowBoot.ts) */
  readonly startRunner: (options?: { readonly slowBootMs?: number }) => Promise<ServiceProcess>
  readonly startApi: () => Promise<ServiceProcess>
  readonly stop: () => Promise<void>
}

export interface ChaosOptions {
  readonly databaseUrl: string
  readonly redisUrl?: string
  readonly runners?: number
  readonly apis?: number
  readonly channels?: number
  readonly env?: Record<string, string>
}

export const startChaosStack = async (options: ChaosOptions): Promise<ChaosStack> => {
  const channelCount = options.channels ?? 4
  const env: Record<string, string> = {
    DATABASE_URL: options.databaseUrl,
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    LOG_LEVEL: "error",
    RETRY_DELAY_SCALE: "0.01",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    SANDBOX_NUMBERS: Array.from({ length: channelCount }, (_, i) => `+155504100${String(i).padStart(2, "0")}`).join(
      ","
    ),
    ...options.env
  }
  const runners: Array<ServiceProcess> = []
  const apis: Array<ServiceProcess> = []
  const runnerInfo: ChaosStack["runnerInfo"] = new Map()
  const startRunner = async (runnerOptions?: { readonly slowBootMs?: number }) => {
    const [cluster, http, metrics] = [await freePort(), await freePort(), await freePort()]
    const slow = runnerOptions?.slowBootMs
    const runner = startService(
      "runner",
      {
        ...env,
        HOST: "127.0.0.1",
        PORT: String(cluster),
        METRICS_PORT: String(metrics),
        ...(slow ? { SLOW_BOOT_MS: String(slow) } : {})
      },
      http,
      slow ? [resolve(import.meta.dirname, "slowBoot.ts")] : []
    )
    runners.push(runner)
    runnerInfo.set(runner, { address: `127.0.0.1:${cluster}`, metricsUrl: `http://127.0.0.1:${metrics}/metrics` })
    return runner
  }
  const startApi = async () => {
    const api = startService("api", env, await freePort())
    apis.push(api)
    // a process boots in seconds; on a 2-core machine shared with other work it took 90 s
    await waitFor(`${api.baseUrl}/ready`, READY_DEADLINE_MS, 200, api)
    return api
  }
  let sink: Server | undefined
  const stop = async () => {
    await Promise.all([...apis, ...runners].map((p) => p.stop()))
    await new Promise<void>((r) => (sink ? sink.close(() => r()) : r()))
  }
  try {
    for (let i = 0; i < (options.runners ?? 1); i++) await startRunner()
    for (let i = 0; i < (options.apis ?? 1); i++) await startApi()
    const api = apis[0]!.baseUrl
    const dbEnv = { DATABASE_URL: options.databaseUrl }
    const created = await admin([
      "create-user",
      "--email",
      "chaos@example.com",
      "--password",
      "correct horse battery staple",
      "--name",
      "C",
      "--workspace",
      "C",
      "--verified"
    ], dbEnv)
    // the whole pool: an operator's number is honoured as given (unlimited is half the pool)
    const overrides = [["shared_test_sessions", "--value", String(channelCount)], ["webhook_endpoints", "--unlimited"]]
    for (const [entitlement, ...value] of overrides) {
      await admin(["override", "--workspace", created.workspace_id, "--entitlement", entitlement!, ...value], dbEnv)
    }
    const login = await call(api, "POST", "/v1/auth/login", {
      body: { email: "chaos@example.com", password: "correct horse battery staple" }
    })
    const key = await call(api, "POST", "/v1/api-keys", {
      token: login.body.access_token,
      workspace: created.workspace_id,
      body: {
        name: "k",
        mode: "test",
        scopes: ["messages.send", "messages.read", "webhooks.manage", "channels.manage"]
      }
    })
    if (key.status !== 201) throw new Error(`key: ${key.text}`)
    const token = key.body.secret as string
    const seen = new Map<string, number>()
    const receivedAt = new Map<string, number>()
    sink = createServer((req, res) => {
      const id = String(req.headers["x-webhook-event-id"])
      seen.set(id, (seen.get(id) ?? 0) + 1)
      if (!receivedAt.has(id)) receivedAt.set(id, Date.now())
      req.resume()
      req.on("end", () => res.end("ok"))
    })
    await new Promise<void>((r) => sink!.listen(0, "127.0.0.1", () => r()))
    const hook = await call(api, "POST", "/v1/webhook-endpoints", {
      token,
      body: { url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`, event_types: ["*"] }
    })
    if (hook.status !== 201) throw new Error(`webhook endpoint: ${hook.text}`)
    const channels: Array<string> = []
    for (let i = 0; i < channelCount; i++) {
      const session = await call(api, "POST", "/v1/sandbox/sessions", { token })
      if (session.status !== 201) throw new Error(`sandbox session: ${session.text}`)
      await call(api, "POST", `/v1/sandbox/sessions/${session.body.id}/verify`, {
        token,
        body: { phone_number: TO, code: session.body.verification.code }
      })
      channels.push(session.body.channel_id)
    }
    return {
      env,
      runners,
      apis,
      token,
      channels,
      seen,
      receivedAt,
      databaseUrl: options.databaseUrl,
      runnerInfo,
      startRunner,
      startApi,
      stop
    }
  } catch (error) {
    const logs = [...apis, ...runners].map((p) => p.output().slice(-2000)).join("\n---\n")
    await stop()
    throw new Error(`${error}\n${logs}`)
  }
}

export interface Sent {
  readonly at: number
  readonly ms: number
  readonly status: number
  readonly code: string | undefined
  /** `details.reason` of a refusal */
  readonly reason: string | undefined
  readonly id: string | undefined
  readonly key: string
  /** the request never got an answer (connection refused or reset, or the client's timeout) */
  readonly error: string | undefined
}

export interface Load {
  readonly results: Array<Sent>
  readonly stop: () => Promise<void>
}

/**
 * `perSecond` sends spread over the channels, each with its own `Idempotency-Key`, to `targets()`
 * in turn. With `retry`, a request without an answer, with a 503 or with a 409 `in_progress` is sent
 * again with the same key (to the next target) until it gets another answer: what a careful client
 * does.
 */
export const startLoad = (
  stack: ChaosStack,
  options: { readonly perSecond: number; readonly retry?: boolean; readonly timeoutMs?: number },
  targets: () => ReadonlyArray<string> = () =>
    stack.apis.filter((a) => a.child.exitCode === null && a.child.signalCode === null).map((a) => a.baseUrl)
): Load => {
  const results: Array<Sent> = []
  let running = true
  let n = 0
  const inFlight = new Set<Promise<void>>()
  const sendOne = async (i: number) => {
    const key = `chaos-${process.pid}-${i}`
    const channel_id = stack.channels[i % stack.channels.length]!
    const first = Date.now()
    for (let attempt = 0;; attempt++) {
      const list = targets()
      const base = list[(i + attempt) % Math.max(1, list.length)]
      const started = Date.now()
      let sent: Sent
      try {
        const response = await fetch(`${base}/v1/messages`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${stack.token}`,
            "idempotency-key": key
          },
          body: JSON.stringify({ to: TO, channel_id, text: { body: `m${i}` } }),
          signal: AbortSignal.timeout(options.timeoutMs ?? 35_000)
        })
        const text = await response.text()
        const body = text === "" ? undefined : JSON.parse(text)
        sent = {
          at: started,
          ms: Date.now() - started,
          status: response.status,
          code: body?.error?.code,
          reason: body?.error?.details?.reason,
          id: response.status === 201 ? body.id : undefined,
          key,
          error: undefined
        }
      } catch (error) {
        sent = {
          at: started,
          ms: Date.now() - started,
          status: 0,
          code: undefined,
          reason: undefined,
          id: undefined,
          key,
          error: String(error)
        }
      }
      results.push(sent)
      const retryable = sent.status === 0 || sent.status === 503 ||
        (sent.status === 409 && sent.reason === "in_progress")
      // a key claimed by a request that died stays `in_progress` until its lease ends (10 s)
      const again = options.retry === true && retryable && Date.now() - first < 90_000
      if (!again) return
      await new Promise((r) => setTimeout(r, 250))
    }
  }
  const tick = setInterval(() => {
    if (!running) return
    const p = sendOne(n++)
    inFlight.add(p)
    void p.finally(() => inFlight.delete(p))
  }, 1000 / options.perSecond)
  return {
    results,
    stop: async () => {
      running = false
      clearInterval(tick)
      await Promise.all([...inFlight])
    }
  }
}

export interface Accounting {
  readonly accepted: number
  /** accepted messages not `read` when the wait ended */
  readonly notRead: number
  /** messages reported `sent` more than once (the network accepts a message once by id) */
  readonly sentTwice: number
  /** messages offered to the network more than once (at-least-once dispatch allows it) */
  readonly reoffered: number
  /** outbound messages in the database beyond the accepted ones (a 503 that wrote anyway) */
  readonly unaccounted: number
  readonly events: number
  /** events the receiver never got */
  readonly eventsMissing: number
  /** events the receiver got more than once (at-least-once delivery allows it) */
  readonly eventsRepeated: number
  readonly seconds: number
}

/** Waits up to `timeoutMs` for every accepted message to be `read` and every event delivered. */
export const settle = async (stack: ChaosStack, accepted: ReadonlyArray<string>, timeoutMs = 120_000) => {
  // a connection of its own, opened after the faults
  const db = new pg.Client({ connectionString: stack.databaseUrl })
  await db.connect()
  try {
    return await account(stack, db, accepted, timeoutMs)
  } finally {
    await db.end()
  }
}

const account = async (stack: ChaosStack, db: pg.Client, accepted: ReadonlyArray<string>, timeoutMs: number) => {
  const started = Date.now()
  const ids = [...new Set(accepted)]
  const notRead = async () =>
    (await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM messages WHERE id = ANY($1) AND status <> 'read'",
      [ids]
    )).rows[0]!.n + ids.length -
    (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM messages WHERE id = ANY($1)", [ids])).rows[0]!
      .n
  const eventIds = async () =>
    (await db.query<{ id: string }>("SELECT id FROM events WHERE NOT is_test")).rows.map((r) => r.id)
  let unread = await notRead()
  while (unread > 0 && Date.now() - started < timeoutMs) {
    await new Promise((r) => setTimeout(r, 500))
    unread = await notRead()
  }
  let events = await eventIds()
  while (events.some((id) => !stack.seen.has(id)) && Date.now() - started < timeoutMs) {
    await new Promise((r) => setTimeout(r, 500))
    events = await eventIds()
  }
  const sentTwice = (await db.query(
    "SELECT object_id FROM events WHERE type = 'message.sent' GROUP BY object_id HAVING count(*) > 1"
  )).rowCount ?? 0
  const reoffered = (await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM sandbox_deliveries WHERE offers > 1"
  )).rows[0]!.n
  const outbound = (await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM messages WHERE direction = 'outbound'"
  )).rows[0]!.n
  return {
    accepted: ids.length,
    notRead: unread,
    sentTwice,
    reoffered,
    unaccounted: outbound - ids.length,
    events: events.length,
    eventsMissing: events.filter((id) => !stack.seen.has(id)).length,
    eventsRepeated: events.filter((id) => (stack.seen.get(id) ?? 0) > 1).length,
    seconds: Math.round((Date.now() - started) / 1000)
  } satisfies Accounting
}

/** Statuses and codes of `results` as "201", "503 SERVICE_UNAVAILABLE", "no answer". */
export const tally = (results: ReadonlyArray<Sent>) => {
  const out: Record<string, number> = {}
  for (const r of results) {
    const k = r.status === 0 ? "no answer" : r.code ? `${r.status} ${r.code}` : String(r.status)
    out[k] = (out[k] ?? 0) + 1
  }
  return out
}

/** The inode of the TCP socket whose local port is `port` (from /proc/net/tcp and tcp6). */
const socketInode = (port: number): string | undefined => {
  const hex = port.toString(16).toUpperCase().padStart(4, "0")
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    if (!existsSync(file)) continue
    for (const line of readFileSync(file, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/)
      if (fields[1]?.endsWith(`:${hex}`)) return fields[9]
    }
  }
  return undefined
}

const holdsSocket = (pid: number, inode: string) => {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`
      } catch {
        return false
      }
    })
  } catch {
    return false
  }
}

/**
 * The runner that hosts the `WebhookSweeper` singleton: the one whose connection to Postgres is
 * the `LISTEN` for new webhook deliveries (found through the connection's client port).
 */
export const webhookListenerHost = async (stack: ChaosStack): Promise<ServiceProcess | undefined> => {
  const db = new pg.Client({ connectionString: stack.databaseUrl })
  await db.connect()
  try {
    const rows = await db.query<{ client_port: number }>(
      "SELECT client_port FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'"
    )
    for (const { client_port } of rows.rows) {
      const inode = socketInode(client_port)
      const host = inode && stack.runners.find((r) => r.child.signalCode === null && holdsSocket(r.child.pid!, inode))
      if (host) return host
    }
    return undefined
  } finally {
    await db.end()
  }
}
