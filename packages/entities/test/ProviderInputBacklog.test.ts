/**
 * What a runner reports of provider input not recorded yet (docs/OPERATING.md "Provider input
 * during a database outage"): counts per channel in the order taken, their sum and the oldest age
 * across channels, and readiness degraded only past `readyMaxAge`.
 */
import { assert, describe, it } from "@effect/vitest"
import { ProviderInputBacklog } from "@switchboard/entities"
import { Duration, Effect, Layer, TestClock } from "effect"

const { makeChannelInput, summarize } = ProviderInputBacklog

describe("ProviderInputBacklog", () => {
  it("counts a channel's items from taken to recorded; the oldest is the first not recorded", () => {
    const input = makeChannelInput()
    const a = input.add(1_000)
    const b = input.add(2_000)
    input.add(3_000)
    assert.strictEqual(input.waiting(), 3)
    assert.strictEqual(input.oldestAt(), 1_000)
    input.done(b)
    assert.strictEqual(input.oldestAt(), 1_000)
    input.done(a)
    assert.strictEqual(input.oldestAt(), 3_000)
    assert.strictEqual(input.waiting(), 1)
  })

  it("sums the channels that hold anything and ages the oldest item of any", () => {
    const idle = makeChannelInput()
    const one = makeChannelInput()
    const two = makeChannelInput()
    one.add(5_000)
    two.add(2_000)
    two.add(9_000)
    assert.deepStrictEqual(summarize([idle, one, two], 10_000), { waiting: 3, oldestAgeMs: 8_000, channels: 2 })
    assert.deepStrictEqual(summarize([idle], 10_000), { waiting: 0, oldestAgeMs: 0, channels: 0 })
  })

  it.scoped("says the runner is degraded once an item waited longer than readyMaxAge, and not before", () =>
    Effect.gen(function*() {
      const backlog = yield* ProviderInputBacklog.ProviderInputBacklog
      const input = yield* backlog.track
      const ticket = input.add(0)
      yield* TestClock.adjust(Duration.seconds(30))
      assert.isUndefined(yield* backlog.degraded)
      yield* TestClock.adjust(Duration.seconds(1))
      assert.include(yield* backlog.degraded, "provider input waited 31 s")
      input.done(ticket)
      assert.isUndefined(yield* backlog.degraded)
    }).pipe(
      Effect.provide(ProviderInputBacklog.layerWithoutConfig.pipe(
        Layer.provide(ProviderInputBacklog.configLayer({ readyMaxAge: Duration.seconds(30) }))
      ))
    ))
})
