/**
 * Where the data lives. With `DATABASE_URL` set: that Postgres server, pooled. Without it: the
 * embedded Postgres (PGlite) in `DATA_DIR`, kept across restarts.
 */
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"

export class DatabaseConfig extends Context.Tag("@switchboard/db/DatabaseConfig")<DatabaseConfig, {
  /** Postgres connection string; `None` selects the embedded database */
  readonly url: Option.Option<Redacted.Redacted>
  /** Folder of the embedded database */
  readonly dataDir: string
  /** Pool size for a real Postgres server */
  readonly maxConnections: number
  /**
   * Executions of one statement text on a connection after which it is sent as a named, server-side
   * prepared statement (`PreparedStatements`); 0 sends every statement unnamed
   */
  readonly prepareThreshold: number
  /**
   * Tests only: a dumped, already migrated data folder (PGlite `dumpDataDir`) that an in-memory
   * embedded database starts from, so each test file skips re-running every migration
   */
  readonly seedFile?: string
}>() {}

export const config = Config.all({
  url: Config.option(Config.redacted("DATABASE_URL")).pipe(
    Config.map(Option.filter((url) => Redacted.value(url).trim() !== ""))
  ),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data")),
  maxConnections: Config.integer("DATABASE_POOL_SIZE").pipe(Config.withDefault(10)),
  prepareThreshold: Config.integer("DATABASE_PREPARE_THRESHOLD").pipe(
    Config.validate({ message: "must be 0 or more", validation: (n) => n >= 0 }),
    Config.withDefault(5)
  )
})

export const layerFromEnv = Layer.effect(DatabaseConfig, config)

export const layer = (options: Partial<Context.Tag.Service<DatabaseConfig>>) =>
  Layer.effect(
    DatabaseConfig,
    Effect.map(config, (fromEnv) => ({ ...fromEnv, ...options }))
  )
