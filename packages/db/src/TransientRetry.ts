/**
 * The one retry policy of the runner for a passing database failure (`DatabaseUnavailable`):
 * exponential backoff from 100 ms, doubled each time, with jitter (each wait between 80% and 120%
 * of its step), each wait capped at 5 s; bounded by a number of retries unless the caller keeps
 * its input until the database takes it (`forever`). What is left when the retries run out is the
 * caller's documented fallback: the error is still `DatabaseUnavailable`, in its error channel.
 *
 * `retryTransient` only accepts an effect whose error channel can hold `DatabaseUnavailable`:
 * `Effect.retry` over an effect that cannot fail (its database failures are defects) compiles and
 * retries nothing, and that is the bug this module exists to rule out. A test over the sources
 * (`packages/db/test/TransientRetry.test.ts`) forbids `Effect.retry(` and `Schedule`-driven
 * retries in runner code outside this module.
 */
import { Duration, Effect, Schedule } from "effect"
import { DatabaseUnavailable, isDatabaseUnavailable } from "./DatabaseUnavailable.js"

/** The first wait. */
export const BASE = Duration.millis(100)
/** No wait is longer than this. */
export const CAP = Duration.seconds(5)
/** Retries before the caller's fallback, by default (about 12 s of waits in all). */
export const DEFAULT_RETRIES = 6

/** The waits, without a bound on their number: exponential, jittered, capped. */
export const backoff: Schedule.Schedule<Duration.Duration> = Schedule.exponential(BASE, 2).pipe(
  Schedule.jittered,
  Schedule.modifyDelay((delay) => Duration.min(delay, CAP))
)

/** The waits for at most `retries` retries. */
export const bounded = (retries: number): Schedule.Schedule<Duration.Duration> =>
  Schedule.intersect(backoff, Schedule.recurs(retries)).pipe(Schedule.map(([delay]) => delay))

/**
 * A type that says, where a caller passes an effect that cannot fail with `DatabaseUnavailable`,
 * why it is refused.
 */
export interface CannotFailWithDatabaseUnavailable {
  readonly "retryTransient needs an effect whose error channel holds DatabaseUnavailable": never
}

/** `E` when it can hold `DatabaseUnavailable`, a refusal otherwise. */
export type CarriesDatabaseUnavailable<E> = [DatabaseUnavailable] extends [E] ? unknown
  : CannotFailWithDatabaseUnavailable

export interface Options<E = unknown> {
  /** retries before the fallback (`DEFAULT_RETRIES`); `"forever"` for input kept until the database takes it */
  readonly retries?: number | "forever"
  /**
   * which failures are retried: `DatabaseUnavailable` only, by default; a caller that keeps its
   * input whatever failed (a defect it turned into a failure) says so here
   */
  readonly while?: (error: E) => boolean
  /** called at each `DatabaseUnavailable`, with its number from 1 (a log line, a counter) */
  readonly onUnavailable?: (error: DatabaseUnavailable, attempt: number) => Effect.Effect<void>
}

const run = <A, E, R>(self: Effect.Effect<A, E, R>, options: Options<E>): Effect.Effect<A, E, R> => {
  const schedule = options.retries === "forever" ? backoff : bounded(options.retries ?? DEFAULT_RETRIES)
  const onUnavailable = options.onUnavailable
  const retried = options.while ?? isDatabaseUnavailable
  if (onUnavailable === undefined) return Effect.retry(self, { schedule, while: retried })
  return Effect.suspend(() => {
    let attempt = 0
    const counted = Effect.tapError(
      self,
      (error) => isDatabaseUnavailable(error) ? onUnavailable(error, ++attempt) : Effect.void
    )
    return Effect.retry(counted, { schedule, while: retried })
  })
}

/**
 * Runs `self`, and again after each `DatabaseUnavailable` with the policy's backoff. Any other
 * failure ends it at once (it is not passing), unless `while` says otherwise; a defect is not a
 * failure and is not retried. Data-last (`pipe(retryTransient())`) or data-first.
 */
export const retryTransient: {
  <E>(
    options?: Options<E>
  ): <A, E2 extends E, R>(self: Effect.Effect<A, E2, R> & CarriesDatabaseUnavailable<E2>) => Effect.Effect<A, E2, R>
  <A, E, R>(self: Effect.Effect<A, E, R> & CarriesDatabaseUnavailable<E>, options?: Options<E>): Effect.Effect<A, E, R>
} = function(...args: Array<unknown>): unknown {
  if (Effect.isEffect(args[0])) {
    return run(args[0] as Effect.Effect<unknown, unknown, unknown>, (args[1] ?? {}) as Options)
  }
  const options = (args[0] ?? {}) as Options
  return (self: Effect.Effect<unknown, unknown, unknown>) => run(self, options)
} as never

export { DatabaseUnavailable }
