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
import { Cause, Clock, Duration, Effect, Exit, Option, Queue, Schedule, type Scope, Stream } from "effect"

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

/** The wait before listening again after the listen's connection was lost. */
export const RELISTEN = Duration.seconds(5)

/**
 * Runs `listen` (a loop over a `Notifications.listen` stream) again `RELISTEN` after it ended or
 * failed (its connection was lost), a failure logged as the warning `failed`; for ever (the webhook
 * sweeper's wake-ups, `wakeable`'s).
 */
export const relistening = <E, R>(
  failed: string,
  listen: Effect.Effect<unknown, E, R>
): Effect.Effect<never, never, R> =>
  listen.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning(failed, cause)),
    Effect.zipRight(Effect.sleep(RELISTEN)),
    Effect.forever
  )

/**
 * A worker's loop over the rows it takes work from: `step` runs at once, then again as soon as it
 * is woken, and at the latest `idle` after its last run (work a notification missed). It is woken
 * by each element of `wakeups` (`Notifications.listen`: a row queued by any process committed)
 * and by `step`'s own `wake` (a slot came free, a retry came due). Without `wakeups` (the embedded
 * database), while they are down (their stream failed; listened to again after `RELISTEN`), and
 * after a failed step (logged as `failed`), it runs every `poll` instead, as a plain poll would. A
 * stream that goes quiet without failing (`@effect/sql-pg` does not report a listen connection that
 * died) leaves it at `idle`.
 */
export const wakeable = <E, R>(options: {
  readonly wakeups: Option.Option<Stream.Stream<unknown, unknown>>
  readonly idle: Duration.DurationInput
  readonly poll: Duration.DurationInput
  /** the warning a failed step logs (it is run again after `poll`) */
  readonly failed: string
  readonly step: (wake: Effect.Effect<void>) => Effect.Effect<unknown, E, R>
}): Effect.Effect<never, never, R | Scope.Scope> =>
  Effect.gen(function*() {
    const signal = yield* Queue.sliding<void>(1)
    const wake = Effect.asVoid(Queue.offer(signal, undefined))
    // listening from the start: the listen's fiber may first run after the first step
    let listening = Option.isSome(options.wakeups)
    if (Option.isSome(options.wakeups)) {
      const wakeups = options.wakeups.value
      const listen = Effect.suspend(() => {
        listening = true
        return Stream.runForEach(wakeups, () => wake)
      }).pipe(Effect.ensuring(Effect.sync(() => {
        listening = false
      })))
      yield* Effect.forkScoped(relistening("listening for new work failed", listen))
    }
    const step = options.step(wake).pipe(
      Effect.as(true),
      Effect.catchAllCause((cause) => Effect.as(Effect.logWarning(options.failed, cause), false))
    )
    while (true) {
      const succeeded = yield* step
      yield* Queue.take(signal).pipe(
        Effect.timeout(succeeded && listening ? options.idle : options.poll),
        Effect.ignore
      )
    }
  })

/**
 * `effect`, run at most once every `interval`: the returned effect (made once per loop) runs it
 * when `interval` has passed since it last did (by `Clock`; the first time at once) and does
 * nothing otherwise. For the parts of a one-second loop whose work is slower than that: the message
 * sweeper's repairs and dispatch lag, the webhook sweeper's stuck deliveries. The time is taken
 * before `effect` runs, so a failed run waits `interval` too.
 */
export const atMostEvery = <A, E, R>(
  interval: Duration.DurationInput,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<Effect.Effect<Option.Option<A>, E, R>> =>
  Effect.sync(() => {
    const every = Duration.toMillis(interval)
    let last = Number.NEGATIVE_INFINITY
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (now - last < every) return Effect.succeedNone
      last = now
      return Effect.asSome(effect)
    })
  })
