/**
 * Group commit: callers' items wait in a queue; one fiber writes everything queued as ONE
 * statement (`write`), and whatever arrives while that statement runs goes into the next one. An
 * item alone is written at once (no timer, no added wait) unless a `window` is given: then the
 * first item of a statement waits that long for others (callers that come one at a time, spread
 * out, would otherwise each get a statement of their own); under load one round trip serves many
 * callers. Each caller gets its own item's result, and only once its statement has finished; a
 * failed statement fails every caller in it.
 */
import { Context, Deferred, Duration, Effect, FiberId, Queue } from "effect"
import type { Scope } from "effect"

/**
 * How long the first statement item of the dispatch path waits for other channels' (a runner's
 * dispatch claims, `MessageMoves.takeForDispatch`, and the sandbox network's offers,
 * `SandboxProvider`). Tests on the TestClock set it to zero: their clock moves only when they
 * move it.
 */
export class DispatchWindow extends Context.Reference<DispatchWindow>()("@switchboard/db/DispatchWindow", {
  defaultValue: (): Duration.Duration => Duration.millis(10)
}) {}

/**
 * A batch's items in rounds where no key appears twice (one statement cannot move or insert and
 * update one row twice): indices of `items`, the k-th item of a key in the k-th round, so each
 * key's items keep their order from round to round.
 */
export const rounds = <A>(items: ReadonlyArray<A>, key: (item: A) => string): ReadonlyArray<ReadonlyArray<number>> => {
  const out: Array<Array<number>> = []
  const seen = new Map<string, number>()
  items.forEach((item, i) => {
    const k = key(item)
    const n = seen.get(k) ?? 0
    seen.set(k, n + 1)
    ;(out[n] ??= []).push(i)
  })
  return out
}

/**
 * The next batch of `queue`: waits for one item, then (with a `window`) that long for others; at
 * most `maxBatch`. The writers of `make` and `ReceiptBatches` take their statements' items so.
 */
export const takeBatch = <A>(queue: Queue.Dequeue<A>, maxBatch: number, window: Duration.Duration) =>
  Effect.gen(function*() {
    const items = Array.from(yield* Queue.takeBetween(queue, 1, maxBatch))
    if (Duration.toMillis(window) > 0 && items.length < maxBatch) {
      yield* Effect.sleep(window)
      items.push(...(yield* Queue.takeUpTo(queue, maxBatch - items.length)))
    }
    return items
  })

/**
 * `write` gets at most `maxBatch` items and answers with one result per item, in their order.
 * Returns the function callers use; the writing fiber lives in the current scope.
 */
export const make = <A, B, E = never>(
  write: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>,
  maxBatch: number,
  window: Duration.Duration = Duration.zero
): Effect.Effect<(item: A) => Effect.Effect<B, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Effect.acquireRelease(
      Queue.unbounded<{ readonly item: A; readonly done: Deferred.Deferred<B, E> }>(),
      Queue.shutdown
    )
    const writeBatch = Effect.gen(function*() {
      const entries = yield* takeBatch(queue, maxBatch, window)
      const exit = yield* Effect.exit(write(entries.map((e) => e.item)))
      entries.forEach(({ done }, i) =>
        Deferred.unsafeDone(
          done,
          exit._tag === "Success" ? Effect.succeed(exit.value[i]!) : Effect.failCause(exit.cause)
        )
      )
    })
    yield* writeBatch.pipe(Effect.forever, Effect.forkScoped)

    return (item: A) =>
      Effect.suspend(() => {
        const done = Deferred.unsafeMake<B, E>(FiberId.none)
        return Queue.offer(queue, { item, done }).pipe(Effect.zipRight(Deferred.await(done)))
      })
  })
