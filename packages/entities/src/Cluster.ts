/**
 * The three topologies differ only in the layer chosen here (ARCHITECTURE 2):
 * - `runner`: hosts shards, talks to other nodes over TCP (`NodeClusterSocket`), Postgres storage;
 * - `client`: an api node that hosts nothing but reaches every entity;
 * - `single`: everything in one process (`SingleRunner`), what `npm start` runs. On the embedded
 *   database the runner registry is in memory (CLUSTER.md P8: SqlRunnerStorage deadlocks on the
 *   single connection); messages are still stored in the database.
 */
import { ShardingConfig, SingleRunner, Snowflake, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { DatabaseConfig } from "@switchboard/db"
import { Effect, Layer, Option } from "effect"
import { shardingSettings } from "./ClusterSettings.js"

/** Any constant of our own: the session advisory lock held while the cluster's tables are created. */
const STORAGE_TABLES_LOCK = 7_362_001

/**
 * The cluster's storage creates its tables when its layer is built (`CREATE TABLE IF NOT
 * EXISTS`), and two processes doing that at the same instant on a fresh database collide in the
 * catalog (`duplicate key value violates unique constraint "pg_type_typname_nsp_index"`), which
 * kills one of them at start. So every node first builds the storage once while holding an
 * advisory lock: the first creates the tables, the others wait and find them. Postgres only (the
 * embedded database has one process).
 */
export const storageTables: Layer.Layer<never, never, SqlClient.SqlClient> = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (sql.onDialectOrElse({ pg: () => false, orElse: () => true })) return
    yield* Effect.scoped(Effect.gen(function*() {
      const connection = yield* sql.reserve
      yield* connection.executeRaw("SELECT pg_advisory_lock($1)", [STORAGE_TABLES_LOCK])
      yield* Effect.addFinalizer(() =>
        connection.executeRaw("SELECT pg_advisory_unlock($1)", [STORAGE_TABLES_LOCK]).pipe(Effect.ignore)
      )
      yield* Effect.scoped(Effect.all([SqlMessageStorage.make(), SqlRunnerStorage.make({})]))
    }))
  }).pipe(
    Effect.provide([ShardingConfig.layer(shardingSettings), Snowflake.layerGenerator]),
    Effect.orDie
  )
)

export const runner = NodeClusterSocket.layer({ storage: "sql", shardingConfig: shardingSettings }).pipe(
  Layer.provide(storageTables)
)

export const client = NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: shardingSettings })
  .pipe(Layer.provide(storageTables))

export const single = Layer.unwrapEffect(Effect.map(DatabaseConfig.DatabaseConfig, (config) =>
  SingleRunner.layer({
    runnerStorage: Option.isNone(config.url) ? "memory" : "sql",
    shardingConfig: shardingSettings
  })))
