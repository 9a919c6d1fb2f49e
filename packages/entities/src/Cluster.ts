/**
 * The three topologies differ only in the layer chosen here:
 * - `runner`: hosts shards, talks to other nodes over TCP (`NodeClusterSocket`), Postgres storage;
 * - `client`: an api node that hosts nothing but reaches every entity;
 * - `single`: everything in one process (`SingleRunner`), what `npm start` runs. On the embedded
 *   database the runner registry is in memory (SqlRunnerStorage deadlocks on the
 *   single connection); messages are still stored in the database.
 */
import {
  ClusterError,
  ClusterMetrics,
  RunnerAddress,
  RunnerStorage,
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
import {
  Clock,
  Context,
  Deferred,
  Duration,
  Effect,
  Fiber,
  Layer,
  Metric,
  Option,
  Queue,
  Schedule,
  Scope
} from "effect"
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
 * A lock refresh that answers every shard this runner holds, not only those it was asked about.
 *
 * The cluster refreshes the shards it holds every 2 s (`refresh(address, shards)`) and gives up
 * each shard it holds that the answer leaves out. But it takes the list when the refresh starts
 * and compares the answer with what it holds when the answer comes back: a shard acquired in
 * between (the acquire and the refresh share one connection, so on a busy runner one waits for
 * the other) is not in the answer, and the runner gives up the shard it has just taken, then takes
 * it again a second later. Each time its channels' entities stopped and started again on the same
 * runner: measured in `bench:chaos --scenario scale` (`worst_waits_scale_out`), a new runner held a
 * shard for 1-3 s, released it with no other runner in view and took it back 1 s later, and its
 * messages waited 5-22 s for their dispatch (bench/RESULTS.md "Operators' day two"). So the answer
 * also names every shard whose lock row is this runner's and fresh (acquired within the expiry):
 * one more read per refresh. A shard the answer names that is not assigned here is still given up
 * (the cluster checks the assignment), and one released in the meantime has no row.
 */
export const refreshHeld = (
  refresh: RunnerStorage.RunnerStorage["Type"]["refresh"]
): Effect.Effect<
  RunnerStorage.RunnerStorage["Type"]["refresh"],
  never,
  SqlClient.SqlClient | ShardingConfig.ShardingConfig
> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ShardingConfig.ShardingConfig
    const expirySeconds = Math.ceil(Duration.toSeconds(config.shardLockExpiration))
    const readHeld = (address: RunnerAddress.RunnerAddress) =>
      sql<{ shard_id: string }>`SELECT shard_id FROM cluster_locks WHERE address = ${`${address.host}:${address.port}`}
          AND acquired_at >= NOW() - make_interval(secs => ${expirySeconds})`.pipe(
        // shard ids are interned (`ShardId.fromString` answers the same object for the same id)
        Effect.map((rows) => rows.map((r) => ShardId.ShardId.fromString(r.shard_id)))
      )
    return withHeldShards(refresh, readHeld, heldReadDeadline(config))
  })

/**
 * How long a refresh waits for the read of the shards held: a quarter of the refresh interval. The
 * read goes through the pool, not the lock connection, and the cluster takes its lock storage for
 * unhealthy (and stops every entity of the runner) when a refresh misses the interval: during a
 * burst of activations the pool's queue is long (10,000 channel entities activated at ~200/s:
 * 2 of 3 runs of bench:entities lost every entity that way, bench/RESULTS.md 4f).
 */
export const heldReadDeadline = (config: ShardingConfig.ShardingConfig["Type"]): Duration.Duration =>
  Duration.divide(config.shardLockRefreshInterval, 4).pipe(Option.getOrElse(() => Duration.millis(500)))

/**
 * The library's refresh, answering also the shards `readHeld` finds held. The read is best effort:
 * when it fails or takes longer than `deadline`, the refresh answers what the library answered
 * (a shard acquired meanwhile is then given up and taken again, the library's own behaviour), so a
 * slow read never makes a refresh late.
 */
export const withHeldShards = (
  refresh: RunnerStorage.RunnerStorage["Type"]["refresh"],
  readHeld: (address: RunnerAddress.RunnerAddress) => Effect.Effect<ReadonlyArray<ShardId.ShardId>, unknown>,
  deadline: Duration.DurationInput
): RunnerStorage.RunnerStorage["Type"]["refresh"] =>
(address, shardIds) =>
  Effect.flatMap(refresh(address, shardIds), (refreshed) =>
    readHeld(address).pipe(
      Effect.map((held) => [...new Set([...refreshed, ...held])]),
      Effect.timeoutTo({ duration: deadline, onTimeout: () => refreshed, onSuccess: (answer) => answer }),
      Effect.orElseSucceed(() => refreshed)
    ))

/**
 * How long a lock refresh may lean on what an earlier one confirmed (`withRefreshGrace`).
 * - `answerAfter`: half the refresh interval. A refresh that has not answered by then is answered
 *   from the last confirmations, if they are fresh enough, so it never misses the cluster's deadline
 *   (the interval itself) for want of a database answer or a busy event loop.
 * - `maxAge`: the lock expiry less two refresh intervals (8 - 2 x 2 = 4 s). A confirmation older
 *   than that is not leaned on: the refresh waits for the database, and if it is late the cluster
 *   stops the runner's entities within one more interval, so before its lock rows expire (the
 *   expiry) and another runner may take them. Dispatch is fenced by the lock row anyway
 *   (`ShardFencing`): a take by a runner whose row has expired takes nothing.
 */
export interface RefreshGrace {
  readonly answerAfter: Duration.Duration
  readonly maxAge: Duration.Duration
}

export const refreshGrace = (config: ShardingConfig.ShardingConfig["Type"]): RefreshGrace => {
  const interval = Duration.decode(config.shardLockRefreshInterval)
  return {
    answerAfter: Duration.unsafeDivide(interval, 2),
    maxAge: Duration.max(Duration.zero, Duration.subtract(config.shardLockExpiration, Duration.times(interval, 2)))
  }
}

type LockStorage = Pick<RunnerStorage.RunnerStorage["Type"], "acquire" | "refresh" | "release" | "releaseAll">

/**
 * Lock refreshes that a late database answer or a stalled event loop does not turn into the loss
 * of every entity. The cluster times each refresh out after the refresh interval (2 s) and then
 * takes its lock storage for unhealthy: it stops every entity of the runner until a probe
 * succeeds. With 10,000 live channels, 4 of 6 runs of bench:entities lost all of them that way
 * 10-20 s after activation (a forced full GC of a large heap and 10,000 idle connections closing
 * within seconds), although every lock row was still valid for 6 s more (bench/RESULTS.md 4f).
 *
 * So the runner remembers when each of its shards was last confirmed (acquired, or named by a
 * refresh's answer, as of the moment that refresh started). A refresh asks the database as before;
 * when the answer has not come after `answerAfter`, and every shard asked about was confirmed
 * within `maxAge`, it answers the shards confirmed within `maxAge` instead, and the database's
 * answer, when it comes, updates the confirmations. Otherwise it waits for the database, as the
 * library does. A refresh that asks about no shard (the first one, and the probe of an unhealthy
 * runner) always waits for the database. At most one database refresh is in flight: a refresh
 * that starts while one is under way waits for that one.
 */
export const withRefreshGrace = (
  storage: LockStorage,
  grace: RefreshGrace
): Effect.Effect<LockStorage, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    // per runner address: shard -> when it was last confirmed (ms, the Effect clock)
    const confirmed = new Map<string, Map<ShardId.ShardId, number>>()
    const of = (address: RunnerAddress.RunnerAddress) => {
      const key = `${address.host}:${address.port}`
      let shards = confirmed.get(key)
      if (shards === undefined) confirmed.set(key, shards = new Map())
      return shards
    }
    let inFlight: Fiber.Fiber<Array<ShardId.ShardId>, ClusterError.PersistenceError> | undefined
    const maxAgeMillis = Duration.toMillis(grace.maxAge)

    const askDatabase = (address: RunnerAddress.RunnerAddress, shardIds: ReadonlyArray<ShardId.ShardId>) =>
      Effect.gen(function*() {
        const startedAt = yield* Clock.currentTimeMillis
        const answer = yield* storage.refresh(address, shardIds)
        const shards = of(address)
        const named = new Set(answer)
        for (const shardId of answer) shards.set(shardId, Math.max(shards.get(shardId) ?? 0, startedAt))
        // a shard the answer leaves out is not held, unless it was acquired after this refresh started
        for (const [shardId, at] of shards) if (!named.has(shardId) && at <= startedAt) shards.delete(shardId)
        return answer
      })

    const refresh: LockStorage["refresh"] = (address, shardIds) =>
      Effect.gen(function*() {
        const asked = [...shardIds]
        let fiber = inFlight
        if (fiber === undefined) {
          const started = yield* askDatabase(address, asked).pipe(
            Effect.ensuring(Effect.sync(() => {
              inFlight = undefined
            })),
            Effect.forkIn(scope)
          )
          inFlight = fiber = started
        }
        const database = Fiber.join(fiber)
        if (asked.length === 0) return yield* database
        const answered = yield* Effect.timeout(database, grace.answerAfter).pipe(Effect.option)
        if (Option.isSome(answered)) return answered.value
        const now = yield* Clock.currentTimeMillis
        const shards = of(address)
        const fresh = (shardId: ShardId.ShardId) => now - (shards.get(shardId) ?? -Infinity) < maxAgeMillis
        if (!asked.every(fresh)) return yield* database
        const oldest = Math.max(...asked.map((shardId) => now - shards.get(shardId)!))
        yield* Effect.logWarning(
          `shard lock refresh late: answered from confirmations up to ${oldest} ms old (the runner or Postgres is slow)`
        )
        return [...shards.keys()].filter(fresh)
      })

    return {
      acquire: (address, shardIds) =>
        Effect.gen(function*() {
          const startedAt = yield* Clock.currentTimeMillis
          const acquired = yield* storage.acquire(address, shardIds)
          const shards = of(address)
          for (const shardId of acquired) shards.set(shardId, Math.max(shards.get(shardId) ?? 0, startedAt))
          return acquired
        }),
      refresh,
      release: (address, shardId) =>
        Effect.zipRight(Effect.sync(() => of(address).delete(shardId)), storage.release(address, shardId)),
      releaseAll: (address) => Effect.zipRight(Effect.sync(() => of(address).clear()), storage.releaseAll(address))
    }
  })

/**
 * The cluster's SQL runner storage (row-based locks, `cluster_locks`), whose `register` waits for
 * `Registration`, whose shard releases are batched (`batchedRelease`), whose refresh answers
 * every shard held (`refreshHeld`) and leans on recent confirmations when the database is late
 * (`withRefreshGrace`).
 */
const runnerStorage: Layer.Layer<
  RunnerStorage.RunnerStorage,
  never,
  Registration | SqlClient.SqlClient | ShardingConfig.ShardingConfig
> = Layer.scoped(
  RunnerStorage.RunnerStorage,
  Effect.gen(function*() {
    const storage = yield* RunnerStorage.RunnerStorage
    const ready = yield* Registration
    const config = yield* ShardingConfig.ShardingConfig
    const locks = yield* withRefreshGrace({
      ...storage,
      release: yield* batchedRelease,
      refresh: yield* refreshHeld(storage.refresh)
    }, refreshGrace(config))
    return RunnerStorage.RunnerStorage.of({
      ...storage,
      ...locks,
      register: (runner, healthy) => Effect.zipRight(ready.await, storage.register(runner, healthy))
    })
  })
).pipe(Layer.provide(Layer.orDie(SqlRunnerStorage.layer)))

const runner = Layer.provideMerge(
  Layer.merge(shardGauge, ShardFencing.layer).pipe(Layer.provide(ShardingConfig.layerFromEnv(shardingSettings))),
  NodeClusterSocket.layer({ storage: "byo", shardingConfig: shardingSettings }).pipe(
    Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
    Layer.provide(runnerStorage),
    Layer.provide(ShardingConfig.layerFromEnv(shardingSettings)),
    Layer.provide(storageTables)
  )
).pipe(Layer.provideMerge(Layer.effect(Registration, Effect.makeLatch(false))))

/**
 * A runner hosting `entities`: it listens for other nodes on `HOST:PORT`, and registers with the
 * cluster (so that shards are assigned to it) only once `entities` are built (`Registration`).
 */
export const hosting = <E, R>(entities: Layer.Layer<never, E, R>) =>
  Layer.effectDiscard(Effect.flatMap(Registration, (ready) => ready.open)).pipe(
    Layer.provide(entities),
    Layer.provide(runner)
  )

export const client = NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: shardingSettings })
  .pipe(Layer.provide(storageTables))

export const single = Layer.unwrapEffect(Effect.map(DatabaseConfig.DatabaseConfig, (config) =>
  SingleRunner.layer({
    runnerStorage: Option.isNone(config.url) ? "memory" : "sql",
    shardingConfig: shardingSettings
  })))
