/**
 * The three topologies differ only in the layer chosen here:
 * - `runner`: hosts shards, talks to other nodes over TCP (`NodeClusterSocket`), Postgres storage;
 * - `client`: an api node that hosts nothing but reaches every entity;
 * - `single`: everything in one process (`SingleRunner`), what `npm start` runs. On the embedded
 *   database the runner registry is in memory (SqlRunnerStorage deadlocks on the
 *   single connection); messages are still stored in the database.
 */
import {
  ClusterMetrics,
  ShardId,
  Sharding,
  ShardingConfig,
  SingleRunner,
  Snowflake,
  SqlMessageStorage,
  SqlRunnerStorage
} from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { DatabaseConfig } from "@switchboard/db"
import { Effect, Layer, Metric, Option, Schedule } from "effect"
import { shardingSettings } from "./ClusterSettings.js"
import * as ShardFencing from "./ShardFencing.js"

/**
 * The cluster's storage creates its tables when its layer is built (`CREATE TABLE IF NOT
 * EXISTS`), and two processes doing that at the same instant on a fresh database collide in the
 * catalog (`duplicate key value violates unique constraint "pg_type_typname_nsp_index"`), which
 * killed one of them at start. So every node first builds the storage on its own, retrying
 * after a short jittered pause when it failed: by then the winner has created the tables and the
 * retry finds them. (A lock would need a connection of its own beyond the storage's two, which a
 * client with a pool of 2 does not have; the library's statements cannot share a transaction.)
 * Postgres only: the embedded database has one process.
 */
export const storageTables: Layer.Layer<never, never, SqlClient.SqlClient> = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (sql.onDialectOrElse({ pg: () => false, orElse: () => true })) return
    yield* Effect.scoped(Effect.all([SqlMessageStorage.make(), SqlRunnerStorage.make({})])).pipe(
      Effect.catchAllDefect(Effect.fail),
      Effect.retry({ times: 5, schedule: Schedule.exponential("100 millis").pipe(Schedule.jittered) })
    )
  }).pipe(
    Effect.provide([ShardingConfig.layer(shardingSettings), Snowflake.layerGenerator]),
    Effect.orDie
  )
)

/**
 * `effect_cluster_shards` as it is now: the cluster sets that gauge when it acquires shards but not
 * when it releases them, so after a rebalance a runner that gave half its shards away still
 * reported all of them (measured: 300 + 150 with two runners). Every second the shards this runner
 * holds (`Sharding.hasShardId`) are counted into the same gauge.
 */
export const shardGauge: Layer.Layer<never, never, Sharding.Sharding | ShardingConfig.ShardingConfig> = Layer
  .scopedDiscard(Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const config = yield* ShardingConfig.ShardingConfig
    const shards = config.availableShardGroups.flatMap((group) =>
      Array.from({ length: config.shardsPerGroup }, (_, i) => ShardId.make(group, i + 1))
    )
    const held = Effect.sync(() => shards.reduce((n, shard) => n + (sharding.hasShardId(shard) ? 1 : 0), 0))
    yield* held.pipe(
      Effect.flatMap((n) => Metric.set(ClusterMetrics.shards, BigInt(n))),
      Effect.repeat(Schedule.spaced("1 second")),
      Effect.forkScoped
    )
  }))

export const runner = Layer.provideMerge(
  Layer.merge(shardGauge, ShardFencing.layer).pipe(Layer.provide(ShardingConfig.layerFromEnv(shardingSettings))),
  NodeClusterSocket.layer({ storage: "sql", shardingConfig: shardingSettings }).pipe(Layer.provide(storageTables))
)

export const client = NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: shardingSettings })
  .pipe(Layer.provide(storageTables))

export const single = Layer.unwrapEffect(Effect.map(DatabaseConfig.DatabaseConfig, (config) =>
  SingleRunner.layer({
    runnerStorage: Option.isNone(config.url) ? "memory" : "sql",
    shardingConfig: shardingSettings
  })))
