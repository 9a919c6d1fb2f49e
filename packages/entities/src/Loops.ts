/**
 * The runner's long-lived loops (a Channel entity's dispatch loop, the sweepers, the media and
 * import workers) come back: `supervised` runs a loop again after it failed or died, whatever the
 * cause (a `DatabaseUnavailable` that outlasted its retries, a defect), after the runner's backoff
 * (`TransientRetry.backoff`: from 100 ms, doubling, jittered, at most 5 s; back to 100 ms once a run
 * lasted `STEADY`). It ends only when the loop ends by itself (it returns) or is interrupted (its
 * entity or singleton stops): an `Effect.retry` would not see a defect, and a loop that died of
 * one stayed dead (a Channel entity then never dispatched again while it read `connected`).
 */
import { TransientRetry } from "@switchboard/db"
import { Cause, Clock, Duration, Effect, Exit, Schedule } from "effect"

/** A run that lasted this long was healthy: the next restart waits the shortest backoff again. */
export const STEADY = Duration.seconds(30)

export const supervised = <A, E, R>(name: string, loop: Effect.Effect<A, E, R>): Effect.Effect<A, never, R> =>
  Effect.gen(function*() {
    let driver = yield* Schedule.driver(TransientRetry.backoff)
    while (true) {
      const startedAt = yield* Clock.currentTimeMillis
      const exit = yield* Effect.exit(loop)
      if (Exit.isSuccess(exit)) return exit.value
      // stopped from outside (its entity or singleton stops): not a failure, and not restarted
      if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
      if ((yield* Clock.currentTimeMillis) - startedAt >= Duration.toMillis(STEADY)) {
        driver = yield* Schedule.driver(TransientRetry.backoff)
      }
      yield* Effect.logError(`${name} failed; restarting`, exit.cause)
      // waits the next delay (the backoff never ends, so this never fails)
      yield* Effect.orDie(driver.next(undefined))
    }
  })
