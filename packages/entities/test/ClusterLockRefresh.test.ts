/**
 * A runner's lock refresh answers every shard the runner holds (`LockRefresh.refreshHeld`), not only
 * those it was asked about: the cluster asks with the list it held when the refresh started and
 * gives up whatever the answer leaves out, so a shard acquired while the refresh waited was given
 * up at once and taken again a second later (bench/RESULTS.md "Operators' day two"). Real Postgres
 * only (the embedded database has no lock table).
 */
import { RunnerAddress, RunnerStorage, ShardId, ShardingConfig, SqlRunnerStorage } from "@effect/cluster"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Cluster, ClusterSettings, LockRefresh } from "@switchboard/entities"
import { Duration, Effect, Exit, Fiber, Layer, Redacted, TestClock } from "effect"
import pg from "pg"

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("the runner's lock refresh", () => {
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined

  beforeAll(async () => {
    database = await e2eDatabase(url!, "lock_refresh")
  }, 60_000)

  afterAll(async () => {
    await database?.drop()
  }, 60_000)

  it("answers the shards it holds that it was not asked about, and none it does not hold", async () => {
    const me = RunnerAddress.make("127.0.0.1", 41001)
    const other = RunnerAddress.make("127.0.0.1", 41002)
    const shard = (id: number) => ShardId.make("default", id)
    const sorted = (shards: ReadonlyArray<ShardId.ShardId>) => shards.map((s) => s.id).sort((a, b) => a - b)

    const answers = await Effect.gen(function*() {
      const storage = yield* RunnerStorage.RunnerStorage
      const refresh = yield* LockRefresh.refreshHeld(storage.refresh)
      // the refresh started while this runner held shard 1 only; shard 2 was acquired meanwhile
      yield* storage.acquire(me, [shard(1), shard(2)])
      yield* storage.acquire(other, [shard(3)])
      const library = yield* storage.refresh(me, [shard(1)])
      const held = yield* refresh(me, [shard(1)])
      // the very first refresh of a runner whose first acquire is under way asks about no shard
      const first = yield* refresh(me, [])
      yield* storage.release(me, shard(2))
      const afterRelease = yield* refresh(me, [shard(1)])
      return { library, held, first, afterRelease }
    }).pipe(
      Effect.provide(
        SqlRunnerStorage.layer.pipe(
          Layer.provideMerge(ShardingConfig.layer(ClusterSettings.shardingSettings)),
          Layer.provideMerge(Cluster.storageTables),
          Layer.provideMerge(Database.layerPostgres(Redacted.make(database!.url), 4))
        )
      ),
      Effect.scoped,
      Effect.runPromise
    )

    // what @effect/cluster answers by itself: only what it was asked about (the runner then gave shard 2 up)
    assert.deepStrictEqual(sorted(answers.library), [1])
    assert.deepStrictEqual(sorted(answers.held), [1, 2])
    assert.deepStrictEqual(sorted(answers.first), [1, 2])
    // another runner's shard is not in the answer, nor one this runner released
    assert.deepStrictEqual(sorted(answers.afterRelease), [1])

    // a lock row older than the expiry is not held any more, even if it names this runner
    const client = new pg.Client({ connectionString: database!.url })
    await client.connect()
    await client.query(
      "UPDATE cluster_locks SET acquired_at = NOW() - interval '9 seconds' WHERE shard_id = 'default:1'"
    )
    await client.end()
    const stale = await Effect.gen(function*() {
      const storage = yield* RunnerStorage.RunnerStorage
      const refresh = yield* LockRefresh.refreshHeld(storage.refresh)
      return yield* refresh(me, [])
    }).pipe(
      Effect.provide(
        SqlRunnerStorage.layer.pipe(
          Layer.provideMerge(ShardingConfig.layer(ClusterSettings.shardingSettings)),
          Layer.provideMerge(Database.layerPostgres(Redacted.make(database!.url), 2))
        )
      ),
      Effect.scoped,
      Effect.runPromise
    )
    assert.deepStrictEqual(sorted(stale), [])
  }, 60_000)
})

describe("the read of the shards held, within a refresh", () => {
  const me = RunnerAddress.make("127.0.0.1", 41001)
  const shard = (id: number) => ShardId.make("default", id)
  const library = () => Effect.succeed([shard(1)])

  it.effect("answers the library's shards with those the read finds held", () =>
    Effect.gen(function*() {
      const refresh = LockRefresh.withHeldShards(library, () => Effect.succeed([shard(1), shard(2)]), "500 millis")
      const answer = yield* refresh(me, [shard(1)])
      assert.deepStrictEqual(answer.map((s) => s.id), [1, 2])
    }))

  it.effect("answers the library's shards when the read is slower than its deadline, on time", () =>
    Effect.gen(function*() {
      // a read stuck behind the pool's queue (a burst of activations): the refresh must not miss
      // the cluster's interval, or the runner stops every entity it hosts
      const refresh = LockRefresh.withHeldShards(library, () => Effect.never, "500 millis")
      const fiber = yield* Effect.fork(refresh(me, [shard(1)]))
      yield* TestClock.adjust("499 millis")
      assert.isTrue((yield* Fiber.poll(fiber))._tag === "None")
      yield* TestClock.adjust("1 millis")
      const answer = yield* Fiber.join(fiber)
      assert.deepStrictEqual(answer.map((s) => s.id), [1])
    }))

  it.effect("answers the library's shards when the read fails", () =>
    Effect.gen(function*() {
      const refresh = LockRefresh.withHeldShards(library, () => Effect.fail(new Error("connection lost")), "500 millis")
      const answer = yield* refresh(me, [shard(1)])
      assert.deepStrictEqual(answer.map((s) => s.id), [1])
    }))

  it("waits at most a quarter of the refresh interval", () => {
    const deadline = LockRefresh.heldReadDeadline(ShardingConfig.ShardingConfig.of({
      ...ShardingConfig.defaults,
      shardLockRefreshInterval: Duration.decode(ClusterSettings.shardingSettings.shardLockRefreshInterval!)
    }))
    assert.strictEqual(Duration.toMillis(deadline), 500)
  })
})

describe("a lock refresh whose database answer is late (LockRefresh.withRefreshGrace)", () => {
  const me = RunnerAddress.make("127.0.0.1", 41001)
  const shard = (id: number) => ShardId.make("default", id)
  const ids = (shards: ReadonlyArray<ShardId.ShardId>) => shards.map((s) => s.id).sort((a, b) => a - b)
  // the settings every node runs with: refresh every 2 s, rows expire after 8 s
  const grace = LockRefresh.refreshGrace(ShardingConfig.ShardingConfig.of({
    ...ShardingConfig.defaults,
    shardLockRefreshInterval: Duration.decode(ClusterSettings.shardingSettings.shardLockRefreshInterval!),
    shardLockExpiration: Duration.decode(ClusterSettings.shardingSettings.shardLockExpiration!)
  }))

  /** A storage whose refreshes answer after `delay` (what each call gets), with the shards asked about. */
  const storage = (delays: Array<Duration.DurationInput>) => {
    let refreshes = 0
    return {
      calls: () => refreshes,
      storage: {
        acquire: (_: RunnerAddress.RunnerAddress, shardIds: Iterable<ShardId.ShardId>) => Effect.succeed([...shardIds]),
        refresh: (_: RunnerAddress.RunnerAddress, shardIds: Iterable<ShardId.ShardId>) =>
          Effect.suspend(() => {
            const delay = delays[refreshes++] ?? 0
            return Effect.as(Effect.sleep(delay), [...shardIds])
          }),
        release: () => Effect.void,
        releaseAll: () => Effect.void
      }
    }
  }

  it("leans on confirmations for half the interval and up to expiry less two intervals", () => {
    assert.strictEqual(Duration.toMillis(grace.answerAfter), 1_000)
    assert.strictEqual(Duration.toMillis(grace.maxAge), 4_000)
  })

  it.scoped("answers a late refresh from the last confirmations, on time, and takes the database's answer when it comes", () =>
    Effect.gen(function*() {
      const db = storage(["2500 millis", "2500 millis"])
      const locks = yield* LockRefresh.withRefreshGrace(db.storage, grace)
      yield* locks.acquire(me, [shard(1), shard(2)])
      // confirmed at 0 by the acquire; at 1 s the database takes 2.5 s to answer (a stalled runner or server)
      yield* TestClock.adjust("1 seconds")
      const late = yield* Effect.fork(locks.refresh(me, [shard(1), shard(2)]))
      yield* TestClock.adjust("999 millis")
      assert.isTrue((yield* Fiber.poll(late))._tag === "None")
      yield* TestClock.adjust("1 millis")
      // answered at 2 s, within the cluster's 2 s deadline, from what was confirmed 2 s ago
      assert.deepStrictEqual(ids(yield* Fiber.join(late)), [1, 2])
      // a refresh that starts while that one is in flight waits for it rather than asking again
      yield* TestClock.adjust("1 seconds")
      const joined = yield* Effect.fork(locks.refresh(me, [shard(1), shard(2)]))
      yield* TestClock.adjust("499 millis")
      assert.isTrue((yield* Fiber.poll(joined))._tag === "None")
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(ids(yield* Fiber.join(joined)), [1, 2])
      assert.strictEqual(db.calls(), 1)
      // the database's answer confirmed both shards as of 1 s (when it was asked): at 4.5 s a late
      // refresh leans on that (3.5 s old), where the acquire's confirmation (4.5 s old) is too old
      const leaning = yield* Effect.fork(locks.refresh(me, [shard(1), shard(2)]))
      yield* TestClock.adjust("1 seconds")
      assert.deepStrictEqual(ids(yield* Fiber.join(leaning)), [1, 2])
      assert.strictEqual(db.calls(), 2)
    }))

  it.scoped("waits for the database when the last confirmation is older than expiry less two intervals", () =>
    Effect.gen(function*() {
      const db = storage(["10 seconds"])
      const locks = yield* LockRefresh.withRefreshGrace(db.storage, grace)
      yield* locks.acquire(me, [shard(1)])
      yield* TestClock.adjust("3001 millis")
      // asked at 3.001 s: by 4.001 s (when it would lean) the confirmation is 4.001 s old, too old
      const fiber = yield* Effect.fork(locks.refresh(me, [shard(1)]))
      yield* TestClock.adjust("5 seconds")
      assert.isTrue((yield* Fiber.poll(fiber))._tag === "None")
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(ids(yield* Fiber.join(fiber)), [1])
    }))

  it.scoped("does not answer from memory a shard never confirmed, nor a probe once the cluster gave up on a refresh", () =>
    Effect.gen(function*() {
      const db = storage(["3 seconds", "10 seconds"])
      const locks = yield* LockRefresh.withRefreshGrace(db.storage, grace)
      yield* locks.acquire(me, [shard(1)])
      const unknown = yield* Effect.fork(locks.refresh(me, [shard(1), shard(2)]))
      yield* TestClock.adjust("2 seconds")
      assert.isTrue((yield* Fiber.poll(unknown))._tag === "None")
      yield* TestClock.adjust("1 seconds")
      assert.deepStrictEqual(ids(yield* Fiber.join(unknown)), [1, 2])
      // the cluster times the next refresh out (its 2 s deadline): its lock storage is unhealthy
      yield* TestClock.adjust("10 millis")
      const given = yield* Effect.fork(Effect.timeout(locks.refresh(me, [shard(1), shard(2)]), "2 seconds"))
      yield* TestClock.adjust("2 seconds")
      assert.isTrue(Exit.isFailure(yield* Fiber.await(given)))
      // its probes ask about no shard: only the database answers them (here the refresh still in
      // flight, which answers 10 s after it was asked)
      yield* TestClock.adjust("1 seconds")
      const probe = yield* Effect.fork(locks.refresh(me, []))
      yield* TestClock.adjust("6999 millis")
      assert.isTrue((yield* Fiber.poll(probe))._tag === "None")
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(ids(yield* Fiber.join(probe)), [1, 2])
      assert.strictEqual(db.calls(), 2)
    }))

  it.scoped("answers a runner's first refresh, which asks about no shard, with the shards it acquired meanwhile", () =>
    Effect.gen(function*() {
      // the first refresh starts before the first acquire answers; the database is slow (a loaded standalone)
      const db = storage(["3 seconds"])
      const locks = yield* LockRefresh.withRefreshGrace(db.storage, grace)
      const first = yield* Effect.fork(locks.refresh(me, []))
      yield* TestClock.adjust("100 millis")
      yield* locks.acquire(me, [shard(1), shard(2)])
      yield* TestClock.adjust("900 millis")
      // on time for the cluster's 2 s deadline: it keeps the two shards (an answer without them
      // would make it give them up, and a late one would stop every entity of the runner)
      assert.isTrue((yield* Fiber.poll(first))._tag === "Some", "answered within the interval")
      assert.deepStrictEqual(ids(yield* Fiber.join(first)), [1, 2])
    }))

  it.scoped("forgets a shard the database no longer names, and one released", () =>
    Effect.gen(function*() {
      let held = [shard(1), shard(2), shard(3)]
      const locks = yield* LockRefresh.withRefreshGrace({
        acquire: (_, shardIds) => Effect.succeed([...shardIds]),
        // the first refresh answers at once; the next ones never (a database gone quiet)
        refresh: () => held.length === 0 ? Effect.never : Effect.succeed(held.splice(0).slice(0, 2)),
        release: () => Effect.void,
        releaseAll: () => Effect.void
      }, grace)
      yield* locks.acquire(me, [shard(1), shard(2), shard(3)])
      yield* TestClock.adjust("10 millis")
      // shard 3 was taken by another runner after its row expired: the database leaves it out
      assert.deepStrictEqual(ids(yield* locks.refresh(me, [shard(1), shard(2), shard(3)])), [1, 2])
      yield* locks.release(me, shard(2))
      const late = yield* Effect.fork(locks.refresh(me, [shard(1)]))
      yield* TestClock.adjust("1 seconds")
      assert.deepStrictEqual(ids(yield* Fiber.join(late)), [1])
    }))
})
