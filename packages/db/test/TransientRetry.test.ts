/**
 * The runner's one retry policy (`TransientRetry`): it retries a `DatabaseUnavailable` with a
 * capped, jittered exponential backoff, a bounded number of times unless told to keep going, and
 * nothing else; and it refuses, at compile time, an effect that cannot fail with it.
 */
import { assert, describe, it } from "@effect/vitest"
import { DatabaseUnavailable, TransientRetry } from "@switchboard/db"
import { Duration, Effect, Exit, Fiber, Schedule, TestClock } from "effect"

const unavailable = new DatabaseUnavailable.DatabaseUnavailable({ reason: "unreachable", code: "ECONNREFUSED" })

/** An effect that fails with `DatabaseUnavailable` `failures` times, then answers how many calls it took. */
const flaky = (failures: number) => {
  let calls = 0
  const effect: Effect.Effect<number, DatabaseUnavailable.DatabaseUnavailable | "refused"> = Effect.suspend(() =>
    ++calls <= failures ? Effect.fail(unavailable) : Effect.succeed(calls)
  )
  return { effect, calls: () => calls }
}

describe("TransientRetry", () => {
  it.effect("waits from 100 ms, doubling, jittered within 80% to 120%, each wait at most 5 s", () =>
    Effect.gen(function*() {
      const delays = yield* Schedule.run(
        Schedule.delays(TransientRetry.backoff),
        0,
        Array.from({ length: 12 }, (_, i) => i)
      )
      const ms = Array.from(delays, Duration.toMillis)
      ms.forEach((d, i) => {
        const step = 100 * 2 ** i
        assert.isAtMost(d, 5_000, `wait ${i}`)
        if (step * 1.2 <= 5_000) assert.isTrue(d >= step * 0.8 && d <= step * 1.2, `wait ${i}: ${d} for ${step}`)
      })
      assert.strictEqual(ms.at(-1), 5_000, "capped")
    }))

  it.effect("retries a DatabaseUnavailable until the effect succeeds", () =>
    Effect.gen(function*() {
      const { calls, effect } = flaky(3)
      const fiber = yield* Effect.fork(TransientRetry.retryTransient(effect))
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(yield* Fiber.join(fiber), 4)
      assert.strictEqual(calls(), 4)
    }))

  it.effect("gives up after its retries with the error still typed (the caller's fallback)", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const { calls, effect } = flaky(100)
      const fiber = yield* Effect.fork(
        effect.pipe(
          TransientRetry.retryTransient({
            retries: 2,
            onUnavailable: (_, attempt) => Effect.sync(() => void seen.push(attempt))
          })
        )
      )
      yield* TestClock.adjust("1 minute")
      const exit = yield* Fiber.await(fiber)
      assert.deepStrictEqual(exit, Exit.fail(unavailable))
      assert.strictEqual(calls(), 3)
      assert.deepStrictEqual(seen, [1, 2, 3])
    }))

  it.effect("keeps going while the database stays away when told to (retries: forever)", () =>
    Effect.gen(function*() {
      const { effect } = flaky(40)
      const fiber = yield* Effect.fork(TransientRetry.retryTransient(effect, { retries: "forever" }))
      yield* TestClock.adjust("10 minutes")
      assert.strictEqual(yield* Fiber.join(fiber), 41)
    }))

  it.effect("does not retry another failure, nor a defect", () =>
    Effect.gen(function*() {
      let calls = 0
      const refused: Effect.Effect<never, DatabaseUnavailable.DatabaseUnavailable | "refused"> = Effect.suspend(() => {
        calls++
        return Effect.fail("refused" as const)
      })
      assert.strictEqual(yield* Effect.flip(TransientRetry.retryTransient(refused)), "refused")
      assert.strictEqual(calls, 1)
      let died = 0
      const dies: Effect.Effect<never, DatabaseUnavailable.DatabaseUnavailable> = Effect.suspend(() => {
        died++
        return Effect.die(unavailable)
      })
      const exit = yield* Effect.exit(TransientRetry.retryTransient(dies))
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(died, 1)
    }))

  it("refuses, at compile time, an effect that cannot fail with DatabaseUnavailable", () => {
    const cannotFail: Effect.Effect<number> = Effect.succeed(1)
    const otherError: Effect.Effect<number, "refused"> = Effect.fail("refused" as const)
    // @ts-expect-error: its database failures would be defects, which a retry never sees
    TransientRetry.retryTransient(cannotFail)
    // @ts-expect-error: the data-last form refuses it too
    cannotFail.pipe(TransientRetry.retryTransient())
    // @ts-expect-error: an error channel without DatabaseUnavailable
    TransientRetry.retryTransient(otherError)
    const canFail: Effect.Effect<number, DatabaseUnavailable.DatabaseUnavailable | "refused"> = Effect.succeed(1)
    TransientRetry.retryTransient(canFail)
    canFail.pipe(TransientRetry.retryTransient({ retries: 1 }))
  })
})
