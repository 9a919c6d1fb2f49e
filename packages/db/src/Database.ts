/**
 * The SqlClient layers: real Postgres (pooled) or the embedded PGlite served on a private Unix
 * socket and used through the same `@effect/sql-pg` client with exactly ONE connection
 * (more connections break the extended protocol). One SQL dialect for both.
 */
import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
import * as ConnectionBudget from "./ConnectionBudget.js"
import { DatabaseConfig } from "./DatabaseConfig.js"
import * as PoolMetrics from "./PoolMetrics.js"
import * as PreparedStatements from "./PreparedStatements.js"
import * as ServerSettings from "./ServerSettings.js"

const APPLICATION_NAME = "switchboard"

/** Sent on every new connection: no JIT compilation for this service's statements. */
export const JIT_OFF = "SET jit = off"

/**
 * The SqlClient on a `pg` pool of our own, so its counters can be sampled (`PoolMetrics`).
 * Each new connection first turns Postgres' JIT off for its session (`JIT_OFF`).
 * Everything else as `PgClient.layer` does it: the pool's options (`max`, the application name,
 * no connect or idle timeout of its own), errors of idle clients ignored (the next query reports
 * a lost server), one `SELECT 1` at start that must answer within 5 s, and the pool ended (for at
 * most 1 s) when the scope closes.
 */
const layerPool = (options: pg.PoolConfig & { readonly max: number }, prepareThreshold: number) =>
  PgClient.layerFromPool({
    acquire: Effect.gen(function*() {
      const pool = new pg.Pool({
        ...options,
        application_name: APPLICATION_NAME,
        Client: PreparedStatements.clientClass(prepareThreshold),
        // every statement here is short: Postgres' JIT, chosen by the plan's estimated cost (branches
        // never run included), compiled the send statement for ~0.9 s a run against 5.6 ms without it
        // at 10M contacts (docs/OPERATING.md "Postgres settings"). The pool hands a new connection
        // out once this answered; a failure fails that checkout like a failed connect.
        onConnect: async (client) => {
          await client.query(JIT_OFF)
        }
      })
      pool.on("error", () => {})
      yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () => pool.query("SELECT 1"),
          catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
        }),
        () => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
      ).pipe(
        Effect.timeoutFail({
          duration: Duration.seconds(5),
          onTimeout: () =>
            new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        })
      )
      yield* PoolMetrics.sampleEverySecond(pool, options.max)
      return pool
    }),
    applicationName: APPLICATION_NAME
  })

/**
 * Real Postgres from a connection string; a setting we depend on that is off is named in a warning
 * (`ServerSettings`); a pool the server cannot hold is refused (`ConnectionBudget`).
 */
export const layerPostgres = (url: Redacted.Redacted, maxConnections: number, prepareThreshold = 0) =>
  layerPool({ connectionString: Redacted.value(url), max: maxConnections }, prepareThreshold).pipe(
    Layer.tap((context) => Effect.provide(ServerSettings.check, context)),
    // a pool the server cannot hold stops the process here, with one line (docs/CONFIGURATION.md "Connection budget")
    Layer.tap((context) => Effect.provide(ConnectionBudget.check(maxConnections), context))
  )

/** The build's migrated template (packages/db/src/EmbeddedTemplate.ts), next to the bundle that loads it. */
export const TEMPLATE_FILE_NAME = "embedded-template.tar.gz"

/**
 * Where a first start looks for the migrated template: beside the running file, i.e. `dist/`
 * for the bundles `npm start`, the admin CLI and the image run (scripts/build.ts writes it there).
 */
export const builtTemplate = (): string => fileURLToPath(new URL(TEMPLATE_FILE_NAME, import.meta.url))

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/**
 * What a first start says it does: from `template` (the migrated template it found), or with
 * PGlite's initdb and every migration, because no template was at `templateFile`, or because none
 * was looked for (`templateFile` null: the build making the template, `EmbeddedTemplate.make`).
 */
export const creatingMessage = (dir: string, templateFile: string | null, template: string | undefined): string =>
  template !== undefined
    ? `creating the embedded database in ${dir} (first start) from the migrated template ${template}`
    : templateFile === null
    ? `creating a new embedded database in ${dir}: PGlite's initdb and every migration run now, 15-40 s`
    : `creating the embedded database in ${dir} (first start, and no migrated template at ${templateFile}` +
      ": PGlite's initdb and every migration run now, 15-40 s; npm run build makes the template)"

/** What a first start says once the database is there, and how long it took. */
export const createdMessage = (ms: number, templateFile: string | null, template: string | undefined): string =>
  template !== undefined
    ? `created the embedded database in ${seconds(ms)} from the migrated template`
    : `created the embedded database in ${seconds(ms)} with PGlite's initdb${
      templateFile === null ? "" : " (no template)"
    }`

/**
 * The embedded database: PGlite in `dataDir` (or in memory when `undefined`), served on a Unix
 * socket in a private temporary folder, closed when the scope ends. A first start (no database in
 * `dataDir` yet) loads `templateFile`, a dump of a database already made and migrated
 * (`EmbeddedTemplate.make`; default `builtTemplate()`, `null` for none), when that file exists: one Postgres start
 * instead of PGlite's initdb and every migration. Either way the log says which it did and how long it took.
 */
export const layerEmbedded = (
  dataDir: string | undefined,
  seedFile?: string,
  prepareThreshold = 0,
  templateFile: string | null = builtTemplate()
) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const { PGlite } = yield* Effect.promise(() => import("@electric-sql/pglite"))
    // the contact search index (migration 0050) needs pg_trgm, which PGlite loads on request
    const { pg_trgm } = yield* Effect.promise(() => import("@electric-sql/pglite/contrib/pg_trgm"))
    const { PGLiteSocketServer } = yield* Effect.promise(() => import("@electric-sql/pglite-socket"))
    const dir = dataDir === undefined ? undefined : resolve(dataDir, "pglite")
    // a first start cut off while creating the database (kill -9, Ctrl-C, a full disk) leaves this
    // mark beside a half-made folder that PGlite cannot open ("failed to initialize"): made again
    const creating = dataDir === undefined ? undefined : resolve(dataDir, "pglite.creating")
    if (dir !== undefined) {
      mkdirSync(dataDir!, { recursive: true })
      yield* ownerLock(resolve(dataDir!, "owner.lock"))
      if (existsSync(creating!)) {
        yield* Effect.logWarning(
          `the embedded database in ${dir} was left half-made by a first start that did not finish: made again`
        )
        rmSync(dir, { recursive: true, force: true })
      }
    }
    const firstStart = dir !== undefined && !existsSync(resolve(dir, "PG_VERSION"))
    const template = firstStart && templateFile !== null && existsSync(templateFile) ? templateFile : undefined
    if (dir) {
      // an empty folder: the first start creates the database, which takes a while (say so, and how)
      if (firstStart) {
        yield* Effect.logInfo(creatingMessage(dir, templateFile, template))
        writeFileSync(creating!, String(process.pid))
      }
      mkdirSync(dir, { recursive: true })
    }
    const loadFrom = dir === undefined ? seedFile : template
    const started = Date.now()
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise(() =>
        PGlite.create(dir ?? "memory://", {
          extensions: { pg_trgm },
          ...(loadFrom !== undefined ? { loadDataDir: new Blob([readFileSync(loadFrom)]) } : {})
        })
      ).pipe(Effect.orDie),
      (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
    )
    if (firstStart) {
      rmSync(creating!, { force: true })
      yield* Effect.logInfo(createdMessage(Date.now() - started, templateFile, template))
    }
    const socketDir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "sbpg-"))),
      (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
    )
    yield* Effect.acquireRelease(
      Effect.tryPromise(async () => {
        const server = new PGLiteSocketServer({ db, path: join(socketDir, ".s.PGSQL.5432"), maxConnections: 1 })
        await server.start()
        return server
      }).pipe(Effect.orDie),
      (server) => Effect.promise(() => server.stop()).pipe(Effect.ignore)
    )
    return layerPool({ host: socketDir, port: 5432, user: "postgres", database: "postgres", max: 1 }, prepareThreshold)
  }))

/**
 * The embedded database has ONE owner process at a time (two PGlite instances on one folder
 * corrupt it). A lock file holds the owner's pid; a stale one (dead pid) is taken over.
 */
const ownerLock = (path: string) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          writeFileSync(path, String(process.pid), { flag: "wx" })
          return Effect.void
        } catch {
          const owner = Number(readFileSync(path, "utf8").trim())
          if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
            return Effect.dieMessage(
              `The embedded database in ${
                path.replace(/owner\.lock$/, "")
              } is in use by process ${owner}; stop it first (or set DATABASE_URL)`
            )
          }
          rmSync(path, { force: true })
        }
      }
      return Effect.dieMessage(`Could not lock the embedded database (${path})`)
    }),
    () => Effect.sync(() => rmSync(path, { force: true }))
  )

/** Whether process `pid` runs on this machine (the owner of a lock or a test database). */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** `DATA_DIR` value that keeps the embedded database in memory (tests). */
export const MEMORY = "memory://"

/** What the configuration asks for. */
export const layer: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, never, DatabaseConfig> = Layer.unwrapEffect(
  Effect.map(DatabaseConfig, (config) =>
    Option.match(config.url, {
      onNone: () =>
        layerEmbedded(config.dataDir === MEMORY ? undefined : config.dataDir, config.seedFile, config.prepareThreshold),
      onSome: (url) => layerPostgres(url, config.maxConnections, config.prepareThreshold)
    }))
).pipe(Layer.orDie)

/** True when the running database is the embedded one (one connection, memory runner storage). */
export const isEmbedded = Effect.map(DatabaseConfig, (config) => Option.isNone(config.url))
