/**
 * Each test file starts with `@effect/vitest`'s own `it.effect` (test/support/effectVitest.ts), even
 * when a file before it in the same worker ran a `layer` block without the test services.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { restoreEffectVitest } from "./support/effectVitest.js"

const exported = restoreEffectVitest()

describe("@effect/vitest's methods between files", () => {
  // what a file before this one in the worker did
  layer(Layer.empty, { excludeTestServices: true })((inLayer) => {
    inLayer.effect("runs in the layer's runtime", () => Effect.void)
  })
  const leftBehind = it.effect

  it("a layer block leaves its own it.effect on vitest's shared it", () => {
    assert.notStrictEqual(leftBehind, exported.effect)
  })
})

describe("after the next file's setup", () => {
  restoreEffectVitest()
  it.effect("it.effect is the exported one, with its TestClock", () =>
    Effect.gen(function*() {
      assert.strictEqual(it.effect, exported.effect)
      yield* TestClock.adjust("1 seconds")
      assert.strictEqual(yield* Effect.clockWith((clock) => clock.currentTimeMillis), 1_000)
    }))
})
