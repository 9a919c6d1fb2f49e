/**
 * A fresh database for each test file (ARCHITECTURE 8).
 *
 * Real mode (`TEST_DATABASE_URL` or `DATABASE_URL` set): a new Postgres database cloned from a
 * template that the global setup migrated once, dropped when the file's scope ends.
 * Embedded mode: a new in-memory PGlite, migrated.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash, randomBytes } from "node:crypto"
import pg from "pg"
import * as Database from "../Database.js"
import * as DatabaseConfig from "../DatabaseConfig.js"
import * as Infrastructure from "../Infrastructure.js"
import * as Migrations from "../Migrations.js"
import * as Redis from "../Redis.js"

/** The server the tests use, if any. */
export const testDatabaseUrl = (): string | undefined => {
  const url = process.env["TEST_DATABASE_URL"] || process.env["DATABASE_URL"]
  return url && url.trim() !== "" ? url : undefined
}

export const testRedisUrl = (): string | undefined => {
  const url = process.env["TEST_REDIS_URL"] || process.env["REDIS_URL"]
  return url && url.trim() !== "" ? url : undefined
}

/** Template name: changes whenever the list of migrations changes. */
export const templateName = () =>
  "sb_template_" +
  createHash("sha256").update(Object.keys(Migrations.migrations).join(",")).digest("hex").slice(0, 12)

export const withDatabase = (url: string, database: string) => {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

const admin = async <A>(url: string, f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

/** Test databases are named `sb_test_[what_]<pid>[_suffix]`: abandoned when that process is gone. */
const isAbandoned = (database: string): boolean => {
  const pid = Number(/_(\d+)(?:_|$)/.exec(database)?.[1])
  if (!Number.isInteger(pid) || pid <= 0) return true
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH"
  }
}

/** Global setup: (re)creates the migrated template once per test run. */
export const prepareTemplate = async (url: string): Promise<void> => {
  const template = templateName()
  await admin(url, async (client) => {
    await client.query("SELECT pg_advisory_lock(727274)")
    try {
      // Several test runs may share one server (worktrees, CI jobs): drop only the databases of
      // runs that are gone, and other migration sets' templates only when no run is alive.
      const rows = await client.query<{ datname: string }>(
        "SELECT datname FROM pg_database WHERE datname LIKE 'sb\\_template\\_%' OR datname LIKE 'sb\\_test\\_%'"
      )
      const tests = rows.rows.map((r) => r.datname).filter((name) => name.startsWith("sb_test_"))
      const alive = tests.filter((name) => !isAbandoned(name))
      const stale = [
        ...tests.filter(isAbandoned),
        ...(alive.length === 0
          ? rows.rows.map((r) => r.datname).filter((name) => name.startsWith("sb_template_") && name !== template)
          : [])
      ]
      for (const name of stale) await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
      const exists = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [template])
      if (exists.rowCount === 0) {
        await client.query(`CREATE DATABASE "${template}"`)
        await Effect.runPromise(
          Migrations.run.pipe(
            Effect.provide(Database.layerPostgres(Redacted.make(withDatabase(url, template)), 1)),
            Effect.scoped
          )
        )
      }
    } finally {
      await client.query("SELECT pg_advisory_unlock(727274)")
    }
  })
}

/**
 * `DatabaseConfig` naming a fresh database (Infrastructure builds the client and migrates), and
 * `RedisConfig` with a key prefix of its own so files running in parallel never share keys.
 */
export const layerWith = (options: { readonly redisUrl?: string | undefined } = {}) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const url = testDatabaseUrl()
    const redisUrl = options.redisUrl ?? testRedisUrl()
    const suffix = `${process.pid}_${randomBytes(4).toString("hex")}`
    const redis = Redis.configLayer({
      url: redisUrl ? Option.some(Redacted.make(redisUrl)) : Option.none(),
      keyPrefix: `sb_test_${suffix}:`
    })
    if (url === undefined) {
      return Layer.merge(DatabaseConfig.layer({ url: Option.none(), dataDir: Database.MEMORY }), redis)
    }
    const database = `sb_test_${suffix}`
    yield* Effect.acquireRelease(
      Effect.promise(() => admin(url, (c) => c.query(`CREATE DATABASE "${database}" TEMPLATE "${templateName()}"`))),
      () =>
        Effect.promise(() => admin(url, (c) => c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`))).pipe(
          Effect.ignore
        )
    )
    return Layer.merge(
      DatabaseConfig.layer({ url: Option.some(Redacted.make(withDatabase(url, database))), maxConnections: 5 }),
      redis
    )
  }))

export const layer = layerWith()

/** Config plus the migrated SqlClient, for tests of repositories and entities without HTTP. */
export const sqlLayer = Infrastructure.layerWithConfig.pipe(Layer.provideMerge(layer), Layer.orDie)

/** Whether the tests run against real servers. */
export const mode = (): "real" | "embedded" => (testDatabaseUrl() ? "real" : "embedded")
