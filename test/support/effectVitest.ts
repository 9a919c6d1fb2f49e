/**
 * `@effect/vitest`'s `layer(...)(f)` hands `f` vitest's one shared `it` object with its own
 * `effect`, `scoped`, ... assigned onto it (`Object.assign`), and leaves them there. So a plain
 * `it.effect` in the next files of the same worker (vitest `isolate: false`) ran in that layer's
 * runtime: after a layer with `excludeTestServices`, without a `TestClock` ("testClock.adjust is
 * not a function"); after one without, sharing the layer's `TestClock`. Each file starts here with
 * the methods `@effect/vitest` exported (`test/effectVitest.test.ts`). Within one file, write plain
 * `it.effect` tests before a `layer` block, or in a `layer` of their own.
 */
import { it } from "@effect/vitest"

const NAMES = ["effect", "scoped", "live", "scopedLive", "flakyTest", "layer", "prop"] as const
type Methods = Pick<typeof it, (typeof NAMES)[number]>

const KEY = Symbol.for("@switchboard/test/effectVitestMethods")
const store = globalThis as { [KEY]?: Methods }

/** Puts back the methods as exported (the first file of a worker finds them untouched). */
export const restoreEffectVitest = (): Methods => {
  const methods = store[KEY] ??= Object.fromEntries(NAMES.map((name) => [name, it[name]])) as unknown as Methods
  Object.assign(it, methods)
  return methods
}

restoreEffectVitest()
