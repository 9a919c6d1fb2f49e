/**
 * A runner's shard lock refresh, on top of @effect/cluster's SQL runner storage: it answers every
 * shard the runner holds (`refreshHeld`), and a late database answer is bridged by what earlier
 * refreshes and acquires confirmed (`withRefreshGrace`). Both are composed into the runner's storage
 * in `Cluster`.
 */
import type { ClusterError } from "@effect/cluster"
import { RunnerAddress, RunnerStorage, ShardId, ShardingConfig } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Clock, Context, Duration, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"

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
 * library does. A refresh that asks about no shard is a runner's first (it asks before its first
 * acquire answers; a late answer made the cluster stop the shards acquired meanwhile, at every
 * start of a loaded standalone), one of a runner that holds none, or the probe of a runner whose
 * lock storage the cluster took for unhealthy: the first two lean on confirmations like any other
 * (the answer: the shards confirmed within `maxAge`, the acquires under way among them), the probe
 * (every such refresh once one was timed out or failed, until the database answers a refresh asked
 * after that) always waits for the database.
 * At most one database refresh is in flight: a refresh that starts while one is under way waits
 * for that one.
 */
export const withRefreshGrace = (
  storage: LockStorage,
  grace: RefreshGrace,
  /** told when the database answered a refresh or an acquire (the runner's readiness reads it) */
  onConfirmed: (at: number) => void = () => {}
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
    /** Records `shardIds` of `address` as confirmed held at `at` (never moving a confirmation back). */
    const confirm = (address: RunnerAddress.RunnerAddress, shardIds: Iterable<ShardId.ShardId>, at: number) => {
      const shards = of(address)
      for (const shardId of shardIds) shards.set(shardId, Math.max(shards.get(shardId) ?? 0, at))
      return shards
    }
    let inFlight: Fiber.Fiber<Array<ShardId.ShardId>, ClusterError.PersistenceError> | undefined
    const maxAgeMillis = Duration.toMillis(grace.maxAge)
    // when the cluster gave up on a refresh (it timed it out or saw it fail), until the database
    // answers one asked after that: its refreshes of no shard are then probes of its health, which
    // only the database may answer (the answer of a refresh already under way does not count)
    let probingSince: number | undefined

    const askDatabase = (address: RunnerAddress.RunnerAddress, shardIds: ReadonlyArray<ShardId.ShardId>) =>
      Effect.gen(function*() {
        const startedAt = yield* Clock.currentTimeMillis
        const answer = yield* storage.refresh(address, shardIds)
        if (probingSince !== undefined && startedAt >= probingSince) probingSince = undefined
        onConfirmed(startedAt)
        const shards = confirm(address, answer, startedAt)
        const named = new Set(answer)
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
        if (asked.length === 0 && probingSince !== undefined) return yield* database
        const answered = yield* Effect.timeout(database, grace.answerAfter).pipe(Effect.option)
        if (Option.isSome(answered)) return answered.value
        const now = yield* Clock.currentTimeMillis
        const shards = of(address)
        const fresh = (shardId: ShardId.ShardId) => now - (shards.get(shardId) ?? -Infinity) < maxAgeMillis
        if (!asked.every(fresh)) return yield* database
        const answer = [...shards.keys()].filter(fresh)
        const oldest = Math.max(0, ...answer.map((shardId) => now - shards.get(shardId)!))
        yield* Effect.logWarning(
          `shard lock refresh late: answered from confirmations up to ${oldest} ms old (the runner or Postgres is slow)`
        )
        return answer
      }).pipe(
        // the cluster timed it out (it then stops every entity of the runner) or it failed
        Effect.onExit((exit) =>
          Exit.isSuccess(exit) ? Effect.void : Effect.map(Clock.currentTimeMillis, (now) => {
            probingSince ??= now
          })
        )
      )

    return {
      acquire: (address, shardIds) =>
        Effect.gen(function*() {
          const startedAt = yield* Clock.currentTimeMillis
          const acquired = yield* storage.acquire(address, shardIds)
          onConfirmed(startedAt)
          confirm(address, acquired, startedAt)
          return acquired
        }),
      refresh,
      release: (address, shardId) =>
        Effect.zipRight(Effect.sync(() => of(address).delete(shardId)), storage.release(address, shardId)),
      releaseAll: (address) => Effect.zipRight(Effect.sync(() => of(address).clear()), storage.releaseAll(address))
    }
  })

/**
 * When the database last answered one of this runner's lock refreshes or acquires (the Effect
 * clock, ms): the runner's `/ready` reads it (services/runner `Health.ts`).
 */
export class LockConfirmations extends Context.Tag("@switchboard/entities/LockConfirmations")<
  LockConfirmations,
  { readonly lastAt: () => number | undefined; readonly confirmed: (at: number) => void }
>() {}

export const lockConfirmationsLayer = Layer.sync(LockConfirmations, () => {
  let last: number | undefined
  return {
    lastAt: () => last,
    confirmed: (at) => {
      last = Math.max(last ?? 0, at)
    }
  }
})
