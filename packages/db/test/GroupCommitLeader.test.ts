import { assert, describe, it } from "@effect/vitest"
import { GroupCommitLeader } from "@switchboard/db"
import { Deferred, Effect, Exit, Fiber } from "effect"

describe("GroupCommitLeader", () => {
  it.effect("writes a call alone at once, and the calls made meanwhile together in the next write", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<number>> = []
      const release = yield* Deferred.make<void>()
      const call = GroupCommitLeader.make(
        (items: ReadonlyArray<number>) =>
          Effect.gen(function*() {
            writes.push(items)
            // the first write is slow: the next calls arrive while it runs
            if (writes.length === 1) yield* Deferred.await(release)
            return items.map((n) => Exit.succeed(n * 10))
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
      // idle again: the next call is written at once, alone
      assert.strictEqual(yield* call(5), 50)
      assert.deepStrictEqual(writes, [[1], [2, 3, 4], [5]])
    }))

  it.effect("gives each call its own outcome, takes at most maxBatch per write, and forgets a call interrupted while it waits", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<number>> = []
      const release = yield* Deferred.make<void>()
      const call = GroupCommitLeader.make(
        (items: ReadonlyArray<number>) =>
          Effect.gen(function*() {
            writes.push(items)
            if (writes.length === 1) yield* Deferred.await(release)
            if (items.includes(99)) return yield* Effect.dieMessage("the statement failed")
            return items.map((n) => n % 2 === 0 ? Exit.die(`refused ${n}`) : Exit.succeed(n))
          }),
        2
      )
      const first = yield* Effect.fork(call(1))
      while (writes.length === 0) yield* Effect.yieldNow()
      const waiting = yield* Effect.forEach([2, 3, 5, 6, 99], (n) => Effect.fork(Effect.exit(call(n))))
      const gone = yield* Effect.fork(call(7))
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
      yield* Fiber.interrupt(gone)
      yield* Deferred.succeed(release, undefined)
      assert.strictEqual(yield* Fiber.join(first), 1)
      const exits = yield* Effect.forEach(waiting, Fiber.join)
      assert.deepStrictEqual(exits.slice(0, 4).map((e) => Exit.isSuccess(e) ? e.value : "failed"), [
        "failed",
        3,
        5,
        "failed"
      ])
      // a failed write fails its own calls only
      assert.isTrue(Exit.isFailure(exits[4]!))
      assert.deepStrictEqual(writes, [[1], [2, 3], [5, 6], [99]])
      assert.strictEqual(yield* call(9), 9)
    }))
})
