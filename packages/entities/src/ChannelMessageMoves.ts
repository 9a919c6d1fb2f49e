/**
 * The Channel entity's moves of its messages (dispatch outcomes, receipts), made in process
 * (`MessageMoves` says why no Message entity request is needed), and their retries: a database
 * that is briefly unreachable (a failover, a restart) fails a move with `DatabaseUnavailable`, so
 * a move keeps trying for a while (`TransientRetry`). Given up, the sweeper repairs what is left.
 */
import type { DatabaseUnavailable, ShardLease } from "@switchboard/db"
import { TransientRetry } from "@switchboard/db"
import { Schemas } from "@switchboard/domain"
import { Clock, Deferred, Duration, Effect, FiberId, Option } from "effect"
import { MessageMoves } from "./MessageMoves.js"
import type { Receipt } from "./MessageMoves.js"
import * as ShardFencing from "./ShardFencing.js"

/** Retries of a move: 10, about 26 s of waits, enough to outlast a database failover. */
const MOVE_RETRIES = 10

/** How long a dispatch waits for its acceptance to be recorded (`providerAccepted`). */
const ACCEPTANCE_WAIT = Duration.seconds(30)

/**
 * A move retried while the database is unavailable (`MOVE_RETRIES`); given up, or failed any other
 * way, it logs and answers `fallback`. A dispatch is a decision: taken only while this runner
 * holds the channel's shard (`lease`, `ShardLease`).
 */
const retried = <A, E>(id: string, move: Effect.Effect<A, E | DatabaseUnavailable.DatabaseUnavailable>, fallback: A) =>
  move.pipe(
    TransientRetry.retryTransient({ retries: MOVE_RETRIES }),
    Effect.catchAllCause((cause) =>
      Effect.logWarning("message status not recorded").pipe(
        Effect.annotateLogs({ message_id: id, cause: String(cause) }),
        Effect.as(fallback)
      )
    )
  )

/**
 * One per Channel entity, its methods shared by all (a runner holds thousands of idle entities:
 * per-entity closures were a share of each one's memory, bench/RESULTS.md 4e). Call them as
 * methods (`moves.dispatching(...)`), not detached.
 */
export class ChannelMessageMoves {
  constructor(
    private readonly moves: MessageMoves,
    private readonly lease: ShardLease.ShardLease | undefined
  ) {}

  /**
   * Takes the message for a dispatch in the send slot at `at` (answers whether it moved; false when
   * refused or not recorded). Refused while a more urgent message of the channel is due, except
   * those to `waiting` recipients (QR spacing).
   */
  dispatching(id: string, at: number, waiting: ReadonlyArray<string>) {
    return retried(
      id,
      // in one statement with the runner's other channels' claims (`MessageMoves.takeForDispatch`)
      Effect.suspend(() => this.moves.takeForDispatch({ id, at: Schemas.toTimestamp(at), waiting, lease: this.lease })),
      false
    )
  }

  /**
   * The provider took the message: recorded with the runner's receipts (`ReceiptBatches`, one
   * statement for many channels). Waits until it is recorded, for 30 s at most (a database that
   * stays away); the move stays queued for the writer then, and the dispatch ends.
   */
  providerAccepted(id: string) {
    return Effect.flatMap(Clock.currentTimeMillis, (at) => {
      const recorded = Deferred.unsafeMake<void>(FiberId.none)
      return this.moves.submitReceipt(
        { messageId: id, status: "provider_accepted", at },
        Effect.asVoid(Deferred.succeed(recorded, undefined))
      ).pipe(Effect.zipRight(Effect.timeout(Deferred.await(recorded), ACCEPTANCE_WAIT)), Effect.ignore)
    })
  }

  /** The provider refused the dispatch: re-queued with backoff, or failed. */
  dispatchFailed(id: string, refusal: { retryable: boolean; code: string; reason: string }) {
    return Effect.asVoid(retried(id, this.moves.dispatchFailed(id, refusal), Option.none()))
  }

  /** The provider throttled the channel: the message waits until `retryAt`, its attempts untouched. */
  throttled(id: string, refusal: { code: string; reason: string }, retryAt: number) {
    return retried(id, this.moves.throttled(id, { ...refusal, retryable: true }, retryAt), undefined)
  }

  /**
   * A receipt the provider reported, written with the runner's other receipts
   * (`ReceiptBatches`: not given up while the runner lives; a provider may not tell it again);
   * `done` runs once it is recorded.
   */
  receipt(receipt: Receipt, done: Effect.Effect<void>) {
    return this.moves.submitReceipt(receipt, done)
  }
}

export const makeChannelMessageMoves = Effect.gen(function*() {
  const moves = yield* MessageMoves
  // a dispatch is a decision: taken only while this runner holds the channel's shard (`ShardLease`)
  const lease = Option.getOrUndefined(yield* ShardFencing.currentLease)
  return new ChannelMessageMoves(moves, lease)
})
