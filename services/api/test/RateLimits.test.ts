/**
 * How loudly the rate limits fail open (docs/LIMITS.md "Rate limits"): while the store is
 * unreachable every request is allowed, with one warning when the outage begins, a reminder every
 * 30 s, and one line when the store answers again, each counting the requests allowed unchecked;
 * never a line per request.
 */
import { RateLimiter } from "@effect/experimental"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, HashMap, Layer, Logger, TestClock } from "effect"
import { RateLimits } from "../src/services/RateLimits.js"

interface Line {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
}

/** The real memory store, unreachable while `store.down`. */
const flakyLimiter = (store: { down: boolean }) =>
  Layer.effect(
    RateLimiter.RateLimiter,
    Effect.map(RateLimiter.make, (real) => ({
      ...real,
      consume: (options: Parameters<typeof real.consume>[0]) =>
        store.down ? Effect.fail(new RateLimiter.RateLimitStoreError({ message: "store down" })) : real.consume(options)
    }))
  ).pipe(Layer.provide(RateLimiter.layerStoreMemory))

describe("rate limits when the store is unreachable", () => {
  it.effect("allow every request and log the outage's start, reminders and end, never per request", () => {
    const store = { down: false }
    const lines: Array<Line> = []
    const capture = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ annotations, logLevel, message }) => {
        lines.push({
          level: logLevel.label,
          message: String(Array.isArray(message) ? message[0] : message),
          annotations: Object.fromEntries(HashMap.toEntries(annotations))
        })
      })
    )
    const config = Layer.setConfigProvider(
      ConfigProvider.fromMap(new Map([["RATE_LIMITS", "on"], ["RATE_LIMIT_LOGIN", "3/15 minutes"]]))
    )
    return Effect.gen(function*() {
      const limits = yield* RateLimits
      const attempt = limits.enforce("login", "203.0.113.7").pipe(Effect.either)
      for (let i = 0; i < 3; i++) assert.isTrue((yield* attempt)._tag === "Right")
      assert.strictEqual((yield* attempt)._tag, "Left", "the limit holds while the store answers")

      store.down = true
      for (let i = 0; i < 50; i++) assert.strictEqual((yield* attempt)._tag, "Right", "fails open")
      yield* TestClock.adjust(Duration.seconds(31))
      for (let i = 0; i < 10; i++) assert.strictEqual((yield* attempt)._tag, "Right")
      store.down = false
      const after = yield* attempt

      const outage = lines.filter((l) => l.message.startsWith("rate limiter store"))
      assert.deepStrictEqual(outage.map((l) => [l.level, l.message]), [
        ["WARN", "rate limiter store unreachable: allowing requests unchecked until it answers"],
        ["WARN", "rate limiter store still unreachable: requests allowed unchecked"],
        ["WARN", "rate limiter store reachable again: limits enforced"]
      ])
      assert.deepStrictEqual(outage[0]!.annotations, {
        rule: "login",
        allowed_unchecked: 1,
        allowed_unchecked_total: 1
      })
      assert.deepStrictEqual(outage[1]!.annotations, {
        rule: "login",
        allowed_unchecked: 50,
        allowed_unchecked_total: 51
      })
      assert.deepStrictEqual(outage[2]!.annotations, { allowed_unchecked_total: 60 })
      // back: the counters were kept by the store, so the limit still holds
      assert.strictEqual(after._tag, "Left")
      assert.deepStrictEqual(lines.filter((l) => l.level === "ERROR"), [])
    }).pipe(
      Effect.provide(RateLimits.Default.pipe(Layer.provide(flakyLimiter(store)), Layer.provide(config))),
      Effect.provide(capture)
    )
  })
})
