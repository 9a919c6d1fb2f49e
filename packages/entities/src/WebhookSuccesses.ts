/**
 * Successful webhook attempts of all the runner's endpoints, recorded together (group commit):
 * an attempt's success waits in a queue; one fiber writes everything queued as ONE statement
 * (`WebhookDeliveriesRepo.recordSuccesses`), and whatever arrives while that statement runs goes
 * into the next one. An attempt alone is written at once (no timer, no added wait); under load a
 * statement records many deliveries instead of one each. Every delivery keeps its own guard and
 * attempt row, and its attempt returns only once its row is committed (a failed statement fails
 * every attempt in it: their deliveries stay `delivering` and are handed out again, as before).
 */
import { WebhookDeliveriesRepo } from "@switchboard/db"
import { Deferred, Effect, FiberId, Queue } from "effect"

export interface Success {
  readonly id: string
  readonly endpointId: string
  readonly attempt: number
  readonly at: string
  readonly responseStatus: number
  readonly latencyMs: number | null
}

/** At most this many deliveries per statement (a bound on the statement's parameters and locks). */
const MAX_BATCH = 256

export class WebhookSuccesses extends Effect.Service<WebhookSuccesses>()("@switchboard/entities/WebhookSuccesses", {
  scoped: Effect.gen(function*() {
    const deliveries = yield* WebhookDeliveriesRepo
    const queue = yield* Effect.acquireRelease(
      Queue.unbounded<{ readonly success: Success; readonly done: Deferred.Deferred<boolean> }>(),
      Queue.shutdown
    )

    const writeBatch = Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(queue, 1, MAX_BATCH)
      const exit = yield* Effect.exit(deliveries.recordSuccesses(Array.from(batch, (b) => b.success)))
      // a failed statement (database unreachable) fails each of its attempts, which log it
      for (const { done, success } of batch) {
        Deferred.unsafeDone(
          done,
          exit._tag === "Success" ? Effect.succeed(exit.value.has(success.id)) : Effect.failCause(exit.cause)
        )
      }
    })
    yield* writeBatch.pipe(Effect.forever, Effect.forkScoped)

    /** Records one successful attempt (with the others queued now); whether it was recorded. */
    const record = (success: Success) =>
      Effect.suspend(() => {
        const done = Deferred.unsafeMake<boolean>(FiberId.none)
        return Queue.offer(queue, { success, done }).pipe(Effect.zipRight(Deferred.await(done)))
      })

    return { record } as const
  })
}) {}
