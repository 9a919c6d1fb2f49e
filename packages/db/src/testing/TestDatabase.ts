/**
 * A fresh database for each test file.
 *
 * Real mode (`TEST_DATABASE_URL` or `DATABASE_URL` set): a new Postgres database cloned from a
 * template that the global setup migrated once, dropped when the file's scope ends.
 * Embedded mode: a new in-memory PGlite loaded from a migrated data folder that the global setup
 * dumped once (`prepareSeed`), so a file does not pay for every migration again.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import * as Database from "../Database.js"
import * as DatabaseConfig from "../DatabaseConfig.js"
import * as EmbeddedTemplate from "../EmbeddedTemplate.js"
import * as MigratedDatabase from "../MigratedDatabase.js"
import * as Migrations from "../Migrations.js"

/** The server the tests use, if any. */
export const testDatabaseUrl = (): string | undefined => {
  const url = process.env["TEST_DATABASE_URL"] || process.env["DATABASE_URL"]
  return url && url.trim() !== "" ? url : undefined
}

/** Template name: changes whenever the list of migrations changes. */
export const templateName = () =>
  "sbt_template_" +
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

/** The process id in a test database name (`sbt_<pid>_...` or `sbt_<what>_<pid>`). */
const ownerPid = (name: string): number | undefined => {
  const match = /^sbt_(\d+)_/.exec(name) ?? /_(\d+)$/.exec(name)
  return match ? Number(match[1]) : undefined
}

/** Global setup: (re)creates the migrated template once per test run. */
export const prepareTemplate = async (url: string): Promise<void> => {
  const template = templateName()
  await admin(url, async (client) => {
    await client.query("SELECT pg_advisory_lock(727274)")
    try {
      // drop what earlier runs left behind, never the databases of a run that is still going
      // (their names carry the owning process id)
      const leftovers = await client.query<{ datname: string }>(
        "SELECT datname FROM pg_database WHERE (datname LIKE 'sbt\\_template\\_%' AND datname <> $1) OR datname LIKE 'sbt\\_%'",
        [template]
      )
      for (const row of leftovers.rows) {
        if (row.datname === template) continue
        // other templates belong to checkouts with other migrations (maybe testing right now)
        if (row.datname.startsWith("sbt_template_")) continue
        const pid = ownerPid(row.datname)
        if (pid !== undefined && Database.isAlive(pid)) continue
        await client.query(`DROP DATABASE IF EXISTS "${row.datname}" WITH (FORCE)`)
      }
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

/** Embedded mode: where the migrated data folder of this list of migrations is dumped. */
export const seedFile = () => join(tmpdir(), `${templateName().replace("template", "seed")}.tar`)

/**
 * Global setup, embedded mode: migrates an on-disk PGlite once and dumps its data folder to
 * `seedFile()` (kept between runs; its name changes with the list of migrations), as the build
 * makes its template (`EmbeddedTemplate.make`, the one definition).
 */
export const prepareSeed = async (): Promise<void> => {
  const target = seedFile()
  if (existsSync(target)) return
  await EmbeddedTemplate.make(target)
}

/**
 * A `DATA_DIR` for a service or CLI process the test starts, already migrated: the seed (made by
 * `prepareSeed`, here if no run made it yet) unpacked into `<dataDir>/pglite`, where the embedded
 * database looks (`EmbeddedTemplate.load`, what a first start does with the build's template).
 */
export const seededDataDir = async (dataDir: string): Promise<string> => {
  await prepareSeed()
  await EmbeddedTemplate.load(seedFile(), dataDir)
  return dataDir
}

/**
 * `DatabaseConfig` naming a fresh database (`MigratedDatabase` builds the client and migrates).
 * Redis for tests is `@switchboard/infra/testing`.
 */
export const layer = Layer.unwrapScoped(Effect.gen(function*() {
  const url = testDatabaseUrl()
  if (url === undefined) {
    const seed = seedFile()
    return DatabaseConfig.layer({
      url: Option.none(),
      dataDir: Database.MEMORY,
      ...(existsSync(seed) ? { seedFile: seed } : {})
    })
  }
  const database = `sbt_${process.pid}_${randomBytes(4).toString("hex")}`
  yield* Effect.acquireRelease(
    Effect.promise(() => admin(url, (c) => c.query(`CREATE DATABASE "${database}" TEMPLATE "${templateName()}"`))),
    () =>
      Effect.promise(() => admin(url, (c) => c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`))).pipe(
        Effect.ignore
      )
  )
  return DatabaseConfig.layer({ url: Option.some(Redacted.make(withDatabase(url, database))), maxConnections: 5 })
}))

/** Config plus the migrated SqlClient, for tests of repositories and entities without HTTP. */
export const sqlLayer = MigratedDatabase.layerWithConfig.pipe(Layer.provideMerge(layer), Layer.orDie)

/** Whether the tests run against real servers. */
export const mode = (): "real" | "embedded" => (testDatabaseUrl() ? "real" : "embedded")

/**
 * A database for a multi-process end-to-end test (real mode): cloned from the migrated
 * template; `drop` removes it. The name carries this process id, so other runs leave it alone.
 */
export const e2eDatabase = async (url: string, name: string) => {
  await prepareTemplate(url)
  const database = `sbt_e2e_${name}_${process.pid}`
  await admin(url, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
    await c.query(`CREATE DATABASE "${database}" TEMPLATE "${templateName()}"`)
  })
  return {
    url: withDatabase(url, database),
    drop: () => admin(url, (c) => c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)).then(() => undefined)
  }
}
