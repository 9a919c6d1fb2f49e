/** `Loops.supervised`: a loop comes back after a failure or a defect, with backoff; it ends when it returns or is interrupted. */
import { assert, describe, it } from "@effect/vitest"
import { DatabaseUnavailable } from "@switchboard/db"
import { Loops } from "@switchboard/entities"
import { Effect, Exit, Fiber, TestClock } from "effect"

describe("Loops.supervised", () => {
  it.effect("runs the loop again after a typed failure and after a defect, until it returns", () =>
    Effect.gen(function*() {
      let runs = 0
      const loop = Effect.suspend(() => {
        runs++
        if (runs === 1) return Effect.fail(new DatabaseUnavailable.DatabaseUnavailable({ reason: "unreachable" }))
        if (runs === 2) return Effect.die(new Error("a bug"))
        if (runs === 3) return Effect.dieMessage("another bug")
        return Effect.succeed("done" as const)
      })
      const fiber = yield* Effect.fork(Loops.supervised("test loop", loop))
      yield* TestClock.adjust("100 millis")
      assert.isTrue(runs >= 2 && runs < 4, "it waits between runs")
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(yield* Fiber.join(fiber), "done")
      assert.strictEqual(runs, 4)
    }))

  it.effect("keeps coming back for as long as the loop keeps failing, at most 5 s apart", () =>
    Effect.gen(function*() {
      let runs = 0
      const fiber = yield* Effect.fork(
        Loops.supervised("test loop", Effect.suspend(() => (runs++, Effect.die(new Error("always")))))
      )
      yield* TestClock.adjust("1 minute")
      const after = runs
      yield* TestClock.adjust("1 minute")
      assert.isAtLeast(runs - after, 12, "a minute of failures restarts it at least every 5 s")
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("ends when interrupted, without running the loop again", () =>
    Effect.gen(function*() {
      let runs = 0
      const fiber = yield* Effect.fork(Loops.supervised("test loop", Effect.suspend(() => (runs++, Effect.never))))
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(runs, 1)
    }))
})
