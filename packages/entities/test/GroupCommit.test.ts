import { assert, describe, it } from "@effect/vitest"
import { GroupCommit } from "@switchboard/entities"
import { Deferred, Effect, Fiber } from "effect"

describe("GroupCommit", () => {
  it.scoped("writes a call alone at once, and the calls made meanwhile together in the next write", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<number>> = []
      const release = yield* Deferred.make<void>()
      const call = yield* GroupCommit.make(
        (items: ReadonlyArray<number>) =>
          Effect.gen(function*() {
            writes.push(items)
            // the first write is slow: the next calls arrive while it runs
            if (writes.length === 1) yield* Deferred.await(release)
            return items.map((n) => n * 10)
          }),
        100
      )
      const first = yield* Effect.fork(call(1))
      while (writes.length === 0) yield* Effect.yieldNow()
      const others = yield* Effect.fork(Effect.all([call(2), call(3), call(4)], { concurrency: "unbounded" }))
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
      assert.deepStrictEqual(writes, [[1]])
      yield* Deferred.succeed(release, undefined)
      assert.strictEqual(yield* Fiber.join(first), 10)
      assert.deepStrictEqual(yield* Fiber.join(others), [20, 30, 40])
      assert.deepStrictEqual(writes, [[1], [2, 3, 4]])
    }))

  it.scoped("fails every call of a write that failed, and keeps writing", () =>
    Effect.gen(function*() {
      let failNext = true
      const call = yield* GroupCommit.make(
        (items: ReadonlyArray<number>) =>
          Effect.suspend(() => {
            if (failNext) {
              failNext = false
              return Effect.die(new Error("connection terminated"))
            }
            return Effect.succeed(items)
          }),
        100
      )
      const failed = yield* Effect.exit(call(1))
      assert.strictEqual(failed._tag, "Failure")
      assert.strictEqual(yield* call(2), 2)
    }))
})
