/**
 * The three topologies differ only in the layer chosen here:
 * - `runner`: hosts shards, talks to other nodes over TCP (`ClusterTransport`: every connection
 *   proves `CLUSTER_SECRET`, `ClusterAuthConfig`), Postgres storage;
 * - `client`: an api node that hosts nothing but reaches every entity;
 * - `single`: everything in one process (the library's `SingleRunner`, with the runners' lock
 *   storage on Postgres), what `npm start` runs. On the embedded
 *   database the runner registry is in memory (SqlRunnerStorage deadlocks on the
 *   single connection); messages are still stored in the database.
 */
import {
  ClusterError,
  ClusterMetrics,
  RunnerAddress,
  RunnerHealth,
  Runners,
  RunnerStorage,
  ShardId,
  Sharding,
  ShardingConfig,
  Snowflake,
  SqlMessageStorage,
  SqlRunnerStorage
} from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { DatabaseConfig, TransientRetry } from "@switchboard/db"
import { Context, Deferred, Effect, Layer, Metric, Option, Queue, Schedule } from "effect"
import { shardingSettings } from "./ClusterSettings.js"
import * as ClusterTransport from "./ClusterTransport.js"
import * as LockRefresh from "./LockRefresh.js"
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
      // the library's statements fail with its own errors: the loser of the race is retried whatever it got
      TransientRetry.retryTransient({ retries: 5, while: () => true })
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

/**
 * Opened once the runner's entities are built; until then the runner does not register.
 *
 * The cluster registers a runner (a `cluster_runners` row) as soon as its `Sharding` is built,
 * and every other runner then gives up the shards the new one is assigned, while the new runner
 * may still be building its entities (seconds; minutes on a saturated machine): messages for
 * those shards wait until it has. So the runner's `register` waits for this latch, opened by
 * `hosting` once the entities are registered: the others see the new runner only when it can
 * serve its shards (docs/OPERATING.md "Scaling runners up and down").
 */
export class Registration extends Context.Tag("@switchboard/entities/Cluster/Registration")<
  Registration,
  Effect.Latch
>() {}

/**
 * Shard releases batched into one statement on a pooled connection. The cluster releases every
 * shard it gives up with a `DELETE` of its own, all on the one reserved connection its lock
 * refreshes use, each with the refresh interval (2 s) as its deadline. A runner that gave 200 of
 * its 300 shards to two new runners queued 200 statements ahead of its next refresh; on a loaded
 * machine that refresh missed its deadline, and the runner took its lock storage for unhealthy:
 * it gave up every shard (`effect_cluster_shards` read 0, nothing dispatched) until it could
 * acquire them again (docs/OPERATING.md "Scaling runners up and down"). Releases asked for while
 * one runs are deleted together when it is done.
 */
interface Release {
  readonly address: string
  readonly shardId: string
  readonly done: Deferred.Deferred<void, ClusterError.PersistenceError>
}

const batchedRelease = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const queue = yield* Queue.unbounded<Release>()
  yield* Queue.takeBetween(queue, 1, Number.MAX_SAFE_INTEGER).pipe(
    Effect.flatMap((chunk) => {
      const byAddress = new Map<string, Array<Release>>()
      for (const item of chunk) byAddress.set(item.address, [...(byAddress.get(item.address) ?? []), item])
      return Effect.forEach(
        byAddress,
        ([address, items]) =>
          sql`DELETE FROM cluster_locks WHERE address = ${address} AND shard_id IN ${
            sql.in(items.map((item) => item.shardId))
          }`.pipe(
            Effect.asVoid,
            ClusterError.PersistenceError.refail,
            Effect.exit,
            Effect.flatMap((exit) => Effect.forEach(items, (item) => Deferred.done(item.done, exit)))
          ),
        { discard: true }
      )
    }),
    Effect.forever,
    Effect.forkScoped
  )
  return (address: RunnerAddress.RunnerAddress, shardId: ShardId.ShardId) =>
    Effect.flatMap(
      Deferred.make<void, ClusterError.PersistenceError>(),
      (done) =>
        Queue.offer(queue, { address: `${address.host}:${address.port}`, shardId: shardId.toString(), done }).pipe(
          Effect.zipRight(Deferred.await(done))
        )
    )
})

/**
 * The cluster's SQL runner storage (row-based locks, `cluster_locks`), whose `register` waits for
 * `Registration`, whose shard releases are batched (`batchedRelease`), whose refresh answers
 * every shard held and leans on recent confirmations when the database is late (`LockRefresh`).
 */
const runnerStorage: Layer.Layer<
  RunnerStorage.RunnerStorage,
  never,
  Registration | SqlClient.SqlClient | ShardingConfig.ShardingConfig | LockRefresh.LockConfirmations
> = Layer.scoped(
  RunnerStorage.RunnerStorage,
  Effect.gen(function*() {
    const storage = yield* RunnerStorage.RunnerStorage
    const ready = yield* Registration
    const config = yield* ShardingConfig.ShardingConfig
    const confirmations = yield* LockRefresh.LockConfirmations
    const locks = yield* LockRefresh.withRefreshGrace(
      {
        ...storage,
        release: yield* batchedRelease,
        refresh: yield* LockRefresh.refreshHeld(storage.refresh)
      },
      LockRefresh.refreshGrace(config),
      confirmations.confirmed
    )
    return RunnerStorage.RunnerStorage.of({
      ...storage,
      ...locks,
      register: (runner, healthy) => Effect.zipRight(ready.await, storage.register(runner, healthy))
    })
  })
).pipe(Layer.provide(Layer.orDie(SqlRunnerStorage.layer)))

const runner = Layer.provideMerge(
  Layer.merge(shardGauge, ShardFencing.layer).pipe(Layer.provide(ShardingConfig.layerFromEnv(shardingSettings))),
  ClusterTransport.runner(shardingSettings).pipe(
    Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
    Layer.provide(runnerStorage),
    Layer.provide(ShardingConfig.layerFromEnv(shardingSettings)),
    Layer.provide(storageTables)
  )
).pipe(
  Layer.provideMerge(Layer.effect(Registration, Effect.makeLatch(false))),
  Layer.provideMerge(LockRefresh.lockConfirmationsLayer)
)

/**
 * A runner hosting `entities`: it listens for other nodes on `HOST:PORT`, and registers with the
 * cluster (so that shards are assigned to it) only once `entities` are built (`Registration`).
 * What `entities` and the runner provide stays available (the runner's readiness reads the
 * sharding, the lock confirmations and the provider input backlog).
 */
export const hosting = <A, E, R>(entities: Layer.Layer<A, E, R>) =>
  Layer.effectDiscard(Effect.flatMap(Registration, (ready) => ready.open)).pipe(
    Layer.provideMerge(entities),
    Layer.provideMerge(runner)
  )

/** An api node's cluster: a client of every runner, proving `CLUSTER_SECRET` on each connection. */
export const client = ClusterTransport.client(shardingSettings).pipe(Layer.provide(storageTables))

/**
 * `single` with some sharding settings of its own (a test that needs a longer entity termination
 * timeout). `SingleRunner.layer` as the library builds it, but on Postgres with the runners' lock
 * storage (`runnerStorage`): without its refresh grace a standalone whose event loop or pool was
 * busy for 2 s took its lock storage for unhealthy and stopped every entity, a pairing's stream
 * with them (seen at start and mid-pairing in `npm test` on a loaded machine: "Shard lock storage
 * is unhealthy", then "stream ended before qr.state"). Registration is open from the start: no
 * other runner waits for this one.
 */
export const singleWith = (overrides: Partial<ShardingConfig.ShardingConfig["Type"]>) =>
  Layer.unwrapEffect(Effect.map(DatabaseConfig.DatabaseConfig, (config) =>
    Sharding.layer.pipe(
      Layer.provideMerge(Runners.layerNoop),
      Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
      Layer.provide([
        Option.isNone(config.url)
          ? RunnerStorage.layerMemory
          : runnerStorage.pipe(
            Layer.provide(Layer.effect(Registration, Effect.makeLatch(true))),
            Layer.provide(LockRefresh.lockConfirmationsLayer)
          ),
        RunnerHealth.layerNoop
      ]),
      Layer.provide(ShardingConfig.layerFromEnv({ ...shardingSettings, ...overrides }))
    )))

export const single = singleWith({})
