/**
 * A runner's lock refresh answers every shard the runner holds (`Cluster.refreshHeld`), not only
 * those it was asked about: the cluster asks with the list it held when the refresh started and
 * gives up whatever the answer leaves out, so a shard acquired while the refresh waited was given
 * up at once and taken again a second later (bench/RESULTS.md "Operators' day two"). Real Postgres
 * only (the embedded database has no lock table).
 */
import { RunnerAddress, RunnerStorage, ShardId, ShardingConfig, SqlRunnerStorage } from "@effect/cluster"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Cluster, ClusterSettings } from "@switchboard/entities"
import { Duration, Effect, Fiber, Layer, Redacted, TestClock } from "effect"
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
      const refresh = yield* Cluster.refreshHeld(storage.refresh)
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
      const refresh = yield* Cluster.refreshHeld(storage.refresh)
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
      const refresh = Cluster.withHeldShards(library, () => Effect.succeed([shard(1), shard(2)]), "500 millis")
      const answer = yield* refresh(me, [shard(1)])
      assert.deepStrictEqual(answer.map((s) => s.id), [1, 2])
    }))

  it.effect("answers the library's shards when the read is slower than its deadline, on time", () =>
    Effect.gen(function*() {
      // a read stuck behind the pool's queue (a burst of activations): the refresh must not miss
      // the cluster's interval, or the runner stops every entity it hosts
      const refresh = Cluster.withHeldShards(library, () => Effect.never, "500 millis")
      const fiber = yield* Effect.fork(refresh(me, [shard(1)]))
      yield* TestClock.adjust("499 millis")
      assert.isTrue((yield* Fiber.poll(fiber))._tag === "None")
      yield* TestClock.adjust("1 millis")
      const answer = yield* Fiber.join(fiber)
      assert.deepStrictEqual(answer.map((s) => s.id), [1])
    }))

  it.effect("answers the library's shards when the read fails", () =>
    Effect.gen(function*() {
      const refresh = Cluster.withHeldShards(library, () => Effect.fail(new Error("connection lost")), "500 millis")
      const answer = yield* refresh(me, [shard(1)])
      assert.deepStrictEqual(answer.map((s) => s.id), [1])
    }))

  it("waits at most a quarter of the refresh interval", () => {
    const deadline = Cluster.heldReadDeadline(ShardingConfig.ShardingConfig.of({
      ...ShardingConfig.defaults,
      shardLockRefreshInterval: Duration.decode(ClusterSettings.shardingSettings.shardLockRefreshInterval!)
    }))
    assert.strictEqual(Duration.toMillis(deadline), 500)
  })
})
