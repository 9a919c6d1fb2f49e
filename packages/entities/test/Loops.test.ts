/**
 * `Loops.supervised`: a loop comes back after a failure or a defect, with backoff; it ends when it
 * returns or is interrupted. `Loops.wakeable`: a worker's step runs when woken, seldom when idle,
 * and polls where it cannot be told.
 */
import { assert, describe, it } from "@effect/vitest"
import { DatabaseUnavailable } from "@switchboard/db"
import { Loops } from "@switchboard/entities"
import { Effect, Exit, Fiber, Option, Queue, Stream, TestClock } from "effect"

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

describe("Loops.wakeable", () => {
  /** A step that counts its runs, failing those `failing` says. */
  const counted = (failing: (run: number) => boolean = () => false) => {
    let runs = 0
    return {
      runs: () => runs,
      step: Effect.suspend(() => (runs++, failing(runs) ? Effect.fail("the database went away") : Effect.void))
    }
  }

  it.scoped("without wake-ups (the embedded database), polls every `poll`", () =>
    Effect.gen(function*() {
      const { runs, step } = counted()
      yield* Effect.forkScoped(
        Loops.wakeable({
          wakeups: Option.none(),
          idle: "2 seconds",
          poll: "500 millis",
          failed: "step",
          step: () => step
        })
      )
      yield* TestClock.adjust("0 millis")
      assert.strictEqual(runs(), 1, "it runs at once")
      yield* TestClock.adjust("1200 millis")
      assert.strictEqual(runs(), 3)
    }))

  it.scoped("listening, runs as soon as a wake-up comes, from the channel or its own step, else every `idle`", () =>
    Effect.gen(function*() {
      const notifications = yield* Queue.unbounded<string>()
      const { runs, step } = counted()
      let wakeSelf: Effect.Effect<void> = Effect.void
      yield* Effect.forkScoped(Loops.wakeable({
        wakeups: Option.some(Stream.fromQueue(notifications)),
        idle: "2 seconds",
        poll: "500 millis",
        failed: "step",
        step: (wake) => Effect.zipRight(Effect.sync(() => (wakeSelf = wake)), step)
      }))
      yield* TestClock.adjust("0 millis")
      assert.strictEqual(runs(), 1)
      yield* TestClock.adjust("1900 millis")
      assert.strictEqual(runs(), 1, "no poll within `idle`")
      yield* Queue.offer(notifications, "med_1")
      yield* TestClock.adjust("0 millis")
      assert.strictEqual(runs(), 2, "a notification runs it at once")
      yield* wakeSelf
      yield* TestClock.adjust("0 millis")
      assert.strictEqual(runs(), 3, "its own wake runs it at once")
      yield* Queue.offerAll(notifications, ["med_2", "med_3", "med_4"])
      yield* TestClock.adjust("0 millis")
      assert.isAtMost(runs(), 5, "wake-ups that come together run it once or twice, not once each")
      const before = runs()
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(runs(), before + 1, "and it still looks every `idle`")
    }))

  it.scoped("after a failed step, and while its wake-ups are down, runs every `poll`", () =>
    Effect.gen(function*() {
      const failing = counted((run) => run <= 2)
      yield* Effect.forkScoped(Loops.wakeable({
        wakeups: Option.some(Stream.never),
        idle: "2 seconds",
        poll: "500 millis",
        failed: "step",
        step: () => failing.step
      }))
      yield* TestClock.adjust("1 second")
      assert.strictEqual(failing.runs(), 3, "two failures, each run again after `poll`")
      yield* TestClock.adjust("1900 millis")
      assert.strictEqual(failing.runs(), 3, "then `idle` again")

      const down = counted()
      yield* Effect.forkScoped(Loops.wakeable({
        wakeups: Option.some(Stream.fail("connection lost")),
        idle: "2 seconds",
        poll: "500 millis",
        failed: "step",
        step: () => down.step
      }))
      yield* TestClock.adjust("2 seconds")
      const lost = down.runs()
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(down.runs() - lost, 4, "its listen lost: every `poll` until it listens again")
    }))
})

describe("Loops.relistening", () => {
  it.scoped("listens again `RELISTEN` after its listen failed or ended, for ever", () =>
    Effect.gen(function*() {
      let listens = 0
      // the first listen fails (its connection lost), the second ends, the third goes on
      const listen = Effect.suspend(() => {
        listens++
        return listens === 1 ? Effect.fail("connection lost") : listens === 2 ? Effect.void : Effect.never
      })
      yield* Effect.forkScoped(Loops.relistening("listening failed", listen))
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(listens, 1)
      yield* TestClock.adjust("4 seconds")
      assert.strictEqual(listens, 1, "not before `RELISTEN`")
      yield* TestClock.adjust("1 second")
      assert.strictEqual(listens, 2)
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(listens, 3, "an ended listen is listened again too")
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(listens, 3)
    }))
})

describe("Loops.atMostEvery", () => {
  it.effect("runs the effect at once, then only once the interval has passed since it last ran", () =>
    Effect.gen(function*() {
      let runs = 0
      const gated = yield* Loops.atMostEvery("10 seconds", Effect.sync(() => ++runs))
      // what a one-second loop does with it for 25 s
      const seen: Array<Option.Option<number>> = []
      for (let second = 0; second < 25; second++) {
        seen.push(yield* gated)
        yield* TestClock.adjust("1 second")
      }
      assert.strictEqual(runs, 3)
      assert.deepStrictEqual(
        seen.flatMap((o, second) => Option.isSome(o) ? [[second, o.value]] : []),
        [[0, 1], [10, 2], [20, 3]]
      )
    }))

  it.effect("a failed run waits the interval too", () =>
    Effect.gen(function*() {
      let runs = 0
      const gated = yield* Loops.atMostEvery("10 seconds", Effect.suspend(() => (runs++, Effect.fail("down"))))
      assert.isTrue(Exit.isFailure(yield* Effect.exit(gated)))
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(yield* gated, Option.none())
      yield* TestClock.adjust("5 seconds")
      assert.isTrue(Exit.isFailure(yield* Effect.exit(gated)))
      assert.strictEqual(runs, 2)
    }))
})
