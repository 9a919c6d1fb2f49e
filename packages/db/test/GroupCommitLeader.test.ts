import { assert, describe, it } from "@effect/vitest"
import { GroupCommitLeader } from "@switchboard/db"
import { Deferred, Effect, Exit, Fiber, FiberId, Option } from "effect"

describe("GroupCommitLeader", () => {
  it.effect("writes a call alone at once, and the calls made meanwhile together in the next write", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<number>> = []
      const release = yield* Deferred.make<void>()
      const call = GroupCommitLeader.make({
        write: (items: ReadonlyArray<number>) =>
          Effect.gen(function*() {
            writes.push(items)
            // the first write is slow: the next calls arrive while it runs
            if (writes.length === 1) yield* Deferred.await(release)
            return items.map((n) => Exit.succeed(n * 10))
          }),
        key: String,
        maxBatch: 100,
        maxInFlight: 1
      })
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
      const call = GroupCommitLeader.make({
        write: (items: ReadonlyArray<number>) =>
          Effect.gen(function*() {
            writes.push(items)
            if (writes.length === 1) yield* Deferred.await(release)
            if (items.includes(99)) return yield* Effect.dieMessage("the statement failed")
            return items.map((n) => n % 2 === 0 ? Exit.die(`refused ${n}`) : Exit.succeed(n))
          }),
        key: String,
        maxBatch: 2,
        maxInFlight: 1
      })
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

  it.effect("runs up to maxInFlight statements at once, and the calls made while all run together in the next", () =>
    Effect.gen(function*() {
      const statements = yield* gated((n: number) => String(n), 2)
      const { call, writes } = statements
      const one = yield* Effect.fork(call(1))
      const two = yield* Effect.fork(call(2))
      yield* settle
      // two calls, two slots: each written at once, alone
      assert.deepStrictEqual(writes, [[1], [2]])
      const rest = yield* Effect.fork(Effect.all([call(3), call(4), call(5)], { concurrency: "unbounded" }))
      yield* settle
      assert.deepStrictEqual(writes, [[1], [2]], "no third statement while two run")
      yield* statements.finish(0)
      assert.strictEqual(yield* Fiber.join(one), 1)
      yield* settle
      assert.deepStrictEqual(writes, [[1], [2], [3, 4, 5]])
      yield* statements.finish(2)
      assert.deepStrictEqual(yield* Fiber.join(rest), [3, 4, 5])
      yield* statements.finish(1)
      assert.strictEqual(yield* Fiber.join(two), 2)
      assert.strictEqual(statements.mostAtOnce(), 2)
    }))

  it.effect("writes a burst to one key one call per statement, in order, without waiting for unrelated statements", () =>
    Effect.gen(function*() {
      const statements = yield* gated((item: string) => item[0]!, 2)
      const { call, writes } = statements
      const a1 = yield* Effect.fork(call("a1"))
      const b1 = yield* Effect.fork(call("b1"))
      yield* settle
      const burst = yield* Effect.fork(Effect.all([call("a2"), call("a3"), call("a4")], { concurrency: "unbounded" }))
      yield* settle
      assert.deepStrictEqual(writes, [["a1"], ["b1"]])
      // a1's statement ends while b1's still runs: the burst goes on at once, one call at a time
      yield* statements.finish(0)
      assert.strictEqual(yield* Fiber.join(a1), "a1")
      yield* settle
      assert.deepStrictEqual(writes, [["a1"], ["b1"], ["a2"]])
      yield* statements.finish(2)
      yield* settle
      assert.deepStrictEqual(writes, [["a1"], ["b1"], ["a2"], ["a3"]])
      yield* statements.finish(3)
      yield* settle
      yield* statements.finish(4)
      assert.deepStrictEqual(yield* Fiber.join(burst), ["a2", "a3", "a4"])
      assert.deepStrictEqual(writes, [["a1"], ["b1"], ["a2"], ["a3"], ["a4"]])
      assert.isTrue(Option.isNone(yield* Fiber.poll(b1)), "b1's statement still runs")
      yield* statements.finish(1)
      assert.strictEqual(yield* Fiber.join(b1), "b1")
    }))

  it.effect("takes one call per key into a statement, and the calls of other keys queued behind it", () =>
    Effect.gen(function*() {
      const statements = yield* gated((item: string) => item[0]!, 1)
      const { call, writes } = statements
      const first = yield* Effect.fork(call("a1"))
      yield* settle
      const queued = yield* Effect.fork(
        Effect.all([call("a2"), call("b1"), call("a3"), call("c1"), call("b2")], { concurrency: "unbounded" })
      )
      yield* settle
      yield* statements.finish(0)
      assert.strictEqual(yield* Fiber.join(first), "a1")
      yield* settle
      assert.deepStrictEqual(writes, [["a1"], ["a2", "b1", "c1"]])
      yield* statements.finish(1)
      yield* settle
      assert.deepStrictEqual(writes, [["a1"], ["a2", "b1", "c1"], ["a3", "b2"]])
      yield* statements.finish(2)
      assert.deepStrictEqual(yield* Fiber.join(queued), ["a2", "b1", "a3", "c1", "b2"])
    }))
})

const settle = Effect.repeatN(Effect.yieldNow(), 50)

/**
 * A leader whose statements each wait until the test finishes them (`finish(i)`: the i-th
 * statement given out), answering each item with itself; `mostAtOnce`: the most that ran at once.
 */
const gated = <A>(key: (item: A) => string, maxInFlight: number): Effect.Effect<{
  readonly call: (item: A) => Effect.Effect<A>
  readonly writes: Array<ReadonlyArray<A>>
  readonly finish: (i: number) => Effect.Effect<void>
  readonly mostAtOnce: () => number
}> =>
  Effect.sync(() => {
    const writes: Array<ReadonlyArray<A>> = []
    const gates: Array<Deferred.Deferred<void>> = []
    const gate = (i: number) => (gates[i] ??= Deferred.unsafeMake<void>(FiberId.none))
    let running = 0
    let most = 0
    const call = GroupCommitLeader.make({
      write: (items: ReadonlyArray<A>) =>
        Effect.suspend(() => {
          const i = writes.push(items) - 1
          running++
          most = Math.max(most, running)
          return Deferred.await(gate(i)).pipe(
            Effect.ensuring(Effect.sync(() => void running--)),
            Effect.as(items.map((item) => Exit.succeed(item)))
          )
        }),
      key,
      maxBatch: 100,
      maxInFlight
    })
    return {
      call,
      writes,
      finish: (i: number) => Effect.asVoid(Deferred.succeed(gate(i), undefined)),
      mostAtOnce: () => most
    }
  })
