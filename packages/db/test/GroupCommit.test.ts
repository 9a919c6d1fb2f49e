import { assert, describe, it } from "@effect/vitest"
import { GroupCommit } from "@switchboard/db"
import { Deferred, Duration, Effect, Fiber, TestClock } from "effect"

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

  it.scoped("with a window, the first call waits that long for others, and calls made later go in the next write", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<number>> = []
      const call = yield* GroupCommit.make(
        (items: ReadonlyArray<number>) => Effect.sync(() => (writes.push(items), items)),
        100,
        Duration.millis(10)
      )
      const settle = Effect.repeatN(Effect.yieldNow(), 50)
      const first = yield* Effect.fork(call(1))
      yield* settle
      yield* TestClock.adjust("9 millis")
      const second = yield* Effect.fork(call(2))
      yield* settle
      assert.deepStrictEqual(writes, [], "nothing written before the window closes")
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual([yield* Fiber.join(first), yield* Fiber.join(second)], [1, 2])
      assert.deepStrictEqual(writes, [[1, 2]])
      const third = yield* Effect.fork(call(3))
      yield* settle
      yield* TestClock.adjust("10 millis")
      assert.strictEqual(yield* Fiber.join(third), 3)
      assert.deepStrictEqual(writes, [[1, 2], [3]])
    }))
})

describe("GroupCommit.rounds", () => {
  it("puts a message's second item in a later round, keeping each message's order", () => {
    const id = (o: { readonly messageId: string }) => o.messageId
    assert.deepStrictEqual(
      GroupCommit.rounds([{ messageId: "a" }, { messageId: "b" }, { messageId: "a" }, { messageId: "a" }], id),
      [[0, 1], [2], [3]]
    )
    assert.deepStrictEqual(GroupCommit.rounds([], id), [])
  })
})
