/**
 * A real Switchboard for a benchmark: its own Postgres database (cloned from the migrated
 * template, named after the benchmark and this process), N runner processes and one api node on
 * loopback, a verified user with a workspace, a test-mode API key and sandbox channels.
 * Needs DATABASE_URL and REDIS_URL (benchmarks measure the real topology, never the embedded one).
 */
import { e2eDatabase } from "@switchboard/db/testing"
import pg from "pg"
import {
  admin,
  call,
  clusterSecret,
  freePort,
  startCommand,
  startService,
  waitUntilUp
} from "../../test/support/Processes.js"
import type { ServiceProcess } from "../../test/support/Processes.js"
import { buildServiceBundles } from "../../test/support/ServiceBundles.js"
import { noteServerSettings } from "./Measure.js"

export const RECIPIENT = "+4915112345678"

export interface StackOptions {
  /** names the database: sbt_e2e_bench_<name>_<pid> */
  readonly name: string
  readonly runners?: number
  /** environment for every process, on top of the defaults below */
  readonly env?: Record<string, string>
  /** sandbox numbers the runners may hand out (one channel per session) */
  readonly sandboxNumbers?: number
  /** more environment for runner `i` only (e.g. `NODE_OPTIONS=--inspect=...` to read its heap) */
  readonly runnerEnv?: (i: number) => Record<string, string>
  /** more `--import` modules for the runners (e.g. trusting the fake WhatsApp server) */
  readonly runnerPreload?: ReadonlyArray<string>
  /**
   * How to start a service (program and arguments) instead of the build with this Node
   * (`bench:footprint`: another Node, or the sources through tsx)
   */
  readonly command?: (name: "api" | "runner") => ReadonlyArray<string>
}

export interface Stack {
  readonly api: ServiceProcess
  readonly runners: Array<ServiceProcess>
  /** a direct connection to the stack's database, for counting what happened */
  readonly db: pg.Client
  readonly dbUrl: string
  readonly env: Record<string, string>
  /** the api node's base URL */
  readonly baseUrl: string
  readonly workspaceId: string
  /** a user's access token (workspace-scoped calls need `workspace: workspaceId`) */
  readonly sessionToken: string
  /** A fresh user access token (they expire after ACCESS_TOKEN_TTL_SECONDS, 15 minutes) */
  readonly login: () => Promise<string>
  /** a test-mode API key with the default scopes */
  readonly apiKey: string
  /** creates `count` verified sandbox sessions for RECIPIENT; their channel ids */
  readonly sandboxChannels: (count: number) => Promise<Array<string>>
  /** ms from the api node's spawn to its first 200 on `/ready` */
  readonly apiReadyMs: number
  /** runs an operator command (`npm run admin -- ...`, docs/OPERATING.md) against the stack's database */
  readonly admin: (args: ReadonlyArray<string>) => Promise<any>
  readonly stop: () => Promise<void>
}

export const requireRealServers = (): { databaseUrl: string; redisUrl: string } => {
  const databaseUrl = process.env["DATABASE_URL"]
  const redisUrl = process.env["REDIS_URL"]
  if (!databaseUrl || !redisUrl) {
    console.error("benchmarks need DATABASE_URL and REDIS_URL (real Postgres and Redis)")
    process.exit(2)
  }
  return { databaseUrl, redisUrl }
}

export const sandboxNumbers = (count: number) =>
  Array.from({ length: count }, (_, i) => `+1555${String(i).padStart(7, "0")}`).join(",")

/**
 * Settings a benchmark run may set for every process it starts, the bare baselines included:
 * `DATABASE_PREPARE_THRESHOLD=0` measures without server-side prepared statements, `MALLOC_ARENA_MAX`
 * sets glibc's malloc arenas (RSS).
 */
export const passThrough = (): Record<string, string> =>
  Object.fromEntries(
    ["DATABASE_PREPARE_THRESHOLD", "MALLOC_ARENA_MAX"].flatMap((name) =>
      process.env[name] === undefined ? [] : [[name, process.env[name]!]]
    )
  )

export const startStack = async (options: StackOptions): Promise<Stack> => {
  const { databaseUrl, redisUrl } = requireRealServers()
  // the processes run the production build (`npm run build`), rebuilt first when a source changed
  await buildServiceBundles()
  const database = await e2eDatabase(databaseUrl, `bench_${options.name}`)
  const env: Record<string, string> = {
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    LOG_LEVEL: "error",
    JWT_SECRET: "bench-secret-bench-secret-bench-secret",
    API_KEY_PEPPER: "bench-pepper",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    SANDBOX_NUMBERS: sandboxNumbers(options.sandboxNumbers ?? 10),
    ...passThrough(),
    ...options.env
  }
  const runners: Array<ServiceProcess> = []
  for (let i = 0; i < (options.runners ?? 1); i++) {
    const [cluster, http] = [await freePort(), await freePort()]
    const runnerEnv = { ...env, ...options.runnerEnv?.(i), HOST: "127.0.0.1", PORT: String(cluster) }
    runners.push(
      options.command
        ? startCommand(options.command("runner"), { CLUSTER_SECRET: clusterSecret, ...runnerEnv }, http)
        : startService("runner", runnerEnv, http, options.runnerPreload)
    )
  }
  const apiPort = await freePort()
  const spawnedAt = Date.now()
  const api = options.command
    ? startCommand(options.command("api"), { CLUSTER_SECRET: clusterSecret, ...env }, apiPort)
    : startService("api", env, apiPort)
  const stopAll = async () => {
    await Promise.all([api, ...runners].map((p) => p.stop()))
  }
  try {
    // a loaded machine (load 30+ on 2 cores) can take minutes to start the two services
    await waitUntilUp(api, "/ready", Number(process.env["BENCH_READY_TIMEOUT_MS"] ?? 120_000))
  } catch (error) {
    await stopAll()
    await database.drop()
    throw new Error(`${error}\n${runners.map((r) => r.output().slice(-2000)).join("\n---\n")}`)
  }
  const apiReadyMs = Date.now() - spawnedAt
  const db = new pg.Client({ connectionString: database.url })
  await db.connect()
  const settings = await db.query<{ name: string; setting: string }>(
    "SELECT name, setting FROM pg_settings WHERE name IN ('autovacuum', 'track_counts')"
  )
  noteServerSettings(Object.fromEntries(settings.rows.map((r) => [r.name, r.setting])))
  const adminEnv = {
    DATABASE_URL: database.url,
    JWT_SECRET: env["JWT_SECRET"]!,
    API_KEY_PEPPER: env["API_KEY_PEPPER"]!
  }
  const created = await admin([
    "create-user",
    "--email",
    "bench@example.com",
    "--password",
    "correct horse battery staple",
    "--name",
    "Bench",
    "--workspace",
    "Bench",
    "--verified"
  ], adminEnv)
  // benches pair several QR channels (bench:media, bench:soak): no plan limit on production channels
  // and the whole sandbox pool: an operator's number is honoured as given (unlimited is half the pool)
  const overrides = [
    ["shared_test_sessions", "--value", String(options.sandboxNumbers ?? 10)],
    ["production_channels", "--unlimited"]
  ]
  for (const [entitlement, ...value] of overrides) {
    await admin(["override", "--workspace", created.workspace_id, "--entitlement", entitlement!, ...value], adminEnv)
  }
  const login = async () => {
    const reply = await call(api.baseUrl, "POST", "/v1/auth/login", {
      body: { email: "bench@example.com", password: "correct horse battery staple" }
    })
    if (reply.status !== 200) throw new Error(`login: ${reply.status}`)
    return reply.body.access_token as string
  }
  const sessionToken = await login()
  const key = await call(api.baseUrl, "POST", "/v1/api-keys", {
    token: sessionToken,
    workspace: created.workspace_id,
    body: { name: "bench", mode: "test" }
  })
  if (key.status !== 201) throw new Error(`creating the bench API key: ${key.text}`)
  const apiKey = key.body.secret as string
  return {
    api,
    runners,
    db,
    dbUrl: database.url,
    env,
    baseUrl: api.baseUrl,
    workspaceId: created.workspace_id,
    sessionToken,
    login,
    apiKey,
    apiReadyMs,
    admin: (args) => admin([...args], adminEnv),
    sandboxChannels: async (count) => {
      const ids: Array<string> = []
      for (let i = 0; i < count; i++) {
        const session = await call(api.baseUrl, "POST", "/v1/sandbox/sessions", { token: apiKey })
        if (session.status !== 201) throw new Error(`sandbox session ${i}: ${session.text}`)
        const verified = await call(api.baseUrl, "POST", `/v1/sandbox/sessions/${session.body.id}/verify`, {
          token: apiKey,
          body: { phone_number: RECIPIENT, code: session.body.verification.code }
        })
        if (verified.status !== 200) throw new Error(`verifying sandbox session ${i}: ${verified.text}`)
        ids.push(session.body.channel_id)
      }
      return ids
    },
    stop: async () => {
      await stopAll()
      await db.end()
      await database.drop()
    }
  }
}
