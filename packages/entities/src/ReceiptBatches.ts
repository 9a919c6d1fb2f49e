/**
 * The receipts of all of a runner's channels, written together: each channel's connection hands
 * its receipts (`sent`, `delivered`, `read`) to one queue per runner, and one fiber writes what
 * gathered within `ReceiptWindow` of the first as ONE statement (`MessageMoves.receipts`, in
 * rounds so a message's receipts still apply in the order reported). At 2 msg/s a channel's
 * receipts arrive one at a time, so a queue per channel wrote a statement per receipt: three of
 * the six statements a dispatched message cost (bench/RESULTS.md 3, "Receipts of all channels in
 * one statement").
 *
 * A receipt's time is the provider's (`at`), so the window delays only when it is recorded (and
 * its webhook), never what it records. Receipts are not given up while the runner lives: a
 * statement that fails is retried (a database failover outlasted; `TransientRetry`'s backoff), and the queue keeps what arrives
 * meanwhile, in order. Each receipt's `done` runs once it is recorded (the connection counts what it
 * still has under way: `ChannelConnection`).
 */
import type { DatabaseUnavailable } from "@switchboard/db"
import { GroupCommit, TransientRetry } from "@switchboard/db"
import { Context, Duration, Effect, Queue } from "effect"
import type { Scope } from "effect"
import type { Receipt } from "./MessageMoves.js"

/** How long the first receipt of a batch waits for others; tests set it to zero. */
export class ReceiptWindow extends Context.Reference<ReceiptWindow>()("@switchboard/entities/ReceiptWindow", {
  defaultValue: (): Duration.Duration => Duration.millis(10)
}) {}

/** Receipts written in one statement at most (a bound on its parameters and row locks). */
export const MAX_BATCH = 500

interface Pending {
  readonly receipt: Receipt
  readonly done: Effect.Effect<void>
}

/** Hands a receipt to the runner's writer; `done` runs once it is recorded. */
export type SubmitReceipt = (receipt: Receipt, done: Effect.Effect<void>) => Effect.Effect<void>

/** The writer; its fiber lives in the current scope. */
export const make = (
  write: (batch: ReadonlyArray<Receipt>) => Effect.Effect<unknown, DatabaseUnavailable.DatabaseUnavailable>
): Effect.Effect<SubmitReceipt, never, Scope.Scope> =>
  Effect.gen(function*() {
    const window = yield* ReceiptWindow
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)

    const writeBatch = Effect.gen(function*() {
      const batch = yield* GroupCommit.takeBatch(queue, MAX_BATCH, window)
      // kept whatever failed (a defect too), with the runner's backoff (`TransientRetry`)
      yield* TransientRetry.retryTransient(
        write(batch.map((p) => p.receipt)).pipe(
          Effect.catchAllDefect(Effect.fail),
          Effect.tapErrorCause((cause) =>
            Effect.logWarning("receipts not recorded yet; trying again").pipe(
              Effect.annotateLogs({ receipts: batch.length, cause: String(cause) })
            )
          )
        ),
        { retries: "forever", while: () => true }
      )
      for (const pending of batch) yield* pending.done
    })
    yield* Effect.forkScoped(Effect.forever(writeBatch))

    return (receipt, done) => {
      // a time that is not one could never be written, and would hold up every receipt after it
      if (!Number.isFinite(receipt.at)) {
        return Effect.logWarning("receipt with no valid time dropped").pipe(
          Effect.annotateLogs({ message_id: receipt.messageId, status: receipt.status }),
          Effect.zipRight(done)
        )
      }
      return Queue.offer(queue, { receipt, done })
    }
  })
