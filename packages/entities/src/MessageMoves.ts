/**
 * A message's status changes as the Message entity and the Channel entity make them: each one
 * guarded statement (`MessagesRepo.transition`: row lock, allowed from-state, update, timeline
 * row, status event and webhook fan-out), counted in the metrics once committed.
 *
 * Who may call it: the writer rule (docs/ARCHITECTURE.md "One writer per message, by statement"):
 * the Channel entity in process (`ChannelMessageMoves`), everyone else through the Message entity.
 */
import { type DatabaseUnavailable, GroupCommit, MessagesRepo, type ShardLease, Transactions } from "@switchboard/db"
import { MessageStateMachine, Schemas } from "@switchboard/domain"
import { ProvidersConfig } from "@switchboard/providers"
import { Clock, Effect, Option } from "effect"
import * as MessagingMetrics from "./MessagingMetrics.js"
import * as ReceiptBatches from "./ReceiptBatches.js"

/** Counts the status changes a committed transaction made (a rolled-back one counts nothing). */
const counted = (moves: ReadonlyArray<Option.Option<MessagesRepo.Transitioned>>) =>
  Effect.forEach(
    moves,
    (move) =>
      Option.isSome(move)
        ? MessagingMetrics.recordTransition(move.value.status, move.value.provider)
        : Effect.void,
    { discard: true }
  )

/**
 * A receipt a provider reported (or its acceptance of the message, `provider_accepted`): the
 * message reached `status` at `at` (epoch ms).
 */
export interface Receipt {
  readonly messageId: string
  readonly status: MessagesRepo.ReceiptTrackStatus
  readonly at: number
}

/** A refused dispatch, as the provider (or the sweeper, for a dispatcher that died) reports it. */
export interface DispatchRefusal {
  readonly retryable: boolean
  readonly code: string
  readonly reason: string
}

/** Dispatch claims in one statement at most. */
const MAX_DISPATCH_BATCH = 500

export interface DispatchClaim {
  readonly id: string
  /** the send slot it takes, as a timestamp */
  readonly at: string
  /** recipients that must wait for their spacing (QR) */
  readonly waiting: ReadonlyArray<string>
  readonly lease: ShardLease.ShardLease | undefined
}

export class MessageMoves extends Effect.Service<MessageMoves>()("@switchboard/entities/MessageMoves", {
  scoped: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const messages = yield* MessagesRepo.MessagesRepo
    const { retryDelayScale } = yield* ProvidersConfig.ProvidersConfig

    /** Moves `id` to `to` when its state allows it; answers whether it moved. One statement. */
    const move = (id: string, to: MessageStateMachine.MessageStatus, options: MessagesRepo.TransitionOptions = {}) =>
      messages.transition(id, to, options).pipe(Effect.tap((moved) => counted([moved])), Effect.map(Option.isSome))

    /**
     * Retryable: back to the queue after the next backoff delay, or failed permanently once the
     * retries are used up; permanent: failed. One transaction; answers the status it ended in, if
     * it moved.
     */
    const dispatchFailed = (id: string, refusal: DispatchRefusal) =>
      transactions.run(Effect.gen(function*() {
        const failure = {
          class: refusal.retryable ? "retryable" : "permanent",
          code: refusal.code,
          reason: refusal.reason
        } as const
        if (!refusal.retryable) {
          const failed = yield* messages.transition(id, "failed_permanent", { failure, reason: refusal.reason })
          return [failed]
        }
        const failed = yield* messages.transition(id, "failed_retryable", {
          failure,
          countAttempt: true,
          reason: refusal.reason
        })
        if (Option.isNone(failed)) return [failed]
        const now = yield* Clock.currentTimeMillis
        const next = yield* Option.match(
          MessageStateMachine.dispatchRetryDelayMs(failed.value.attempts, retryDelayScale),
          {
            onNone: () =>
              messages.transition(id, "failed_permanent", {
                failure: { ...failure, class: "permanent" },
                reason: `gave up after ${failed.value.attempts} attempts`
              }),
            onSome: (delay) => {
              const at = Schemas.toTimestamp(now + delay)
              return messages.transition(id, "queued", { nextAttemptAt: at, reason: `retry at ${at}` })
            }
          }
        )
        return [failed, next]
      })).pipe(
        Effect.tap(counted),
        Effect.map((moves) => Option.map(moves[moves.length - 1]!, (t) => t.status))
      )

    /**
     * The provider throttled the channel (not the message): back to the queue until `retryAt`
     * (the channel's pause ends), without spending an attempt (docs/LIMITS.md, "Number
     * protection"). One transaction.
     */
    const throttled = (id: string, refusal: DispatchRefusal, retryAt: number) =>
      transactions.run(Effect.gen(function*() {
        const failure = { class: "retryable", code: refusal.code, reason: refusal.reason } as const
        const failed = yield* messages.transition(id, "failed_retryable", { failure, reason: refusal.reason })
        if (Option.isNone(failed)) return [failed]
        const at = Schemas.toTimestamp(retryAt)
        const next = yield* messages.transition(id, "queued", {
          nextAttemptAt: at,
          reason: `the channel is throttled: waits until ${at}, no attempt spent`
        })
        return [failed, next]
      })).pipe(Effect.tap(counted), Effect.asVoid)

    /**
     * Receipts as the provider reported them, in order: one statement per round, a round taking
     * each message at most once (a message's later receipts wait for the next round, so they
     * still apply in the order reported). Answers how many moved.
     */
    const receipts = (batch: ReadonlyArray<Receipt>) =>
      Effect.gen(function*() {
        let moved = 0
        for (const indices of GroupCommit.rounds(batch, (r) => r.messageId)) {
          const round = indices.map((i) => {
            const r = batch[i]!
            return { id: r.messageId, to: r.status, at: Schemas.toTimestamp(r.at) }
          })
          // one receipt alone: the single move's statement (Postgres plans it faster)
          const moves = round.length === 1
            ? Option.toArray(yield* messages.transition(round[0]!.id, round[0]!.to, { occurredAt: round[0]!.at }))
            : yield* messages.receipts(round)
          yield* counted(moves.map(Option.some))
          moved += moves.length
        }
        return moved
      })

    /**
     * Takes a message for a dispatch (`-> dispatching`), in one statement with the runner's other
     * channels' claims made within `GroupCommit.DispatchWindow` (`MessagesRepo.takeForDispatch`: each guarded
     * as `transition` guards it). Answers whether it moved.
     */
    const takeForDispatch: (claim: DispatchClaim) => Effect.Effect<boolean, DatabaseUnavailable.DatabaseUnavailable> =
      yield* GroupCommit.make(
        (claims: ReadonlyArray<DispatchClaim>) =>
          Effect.gen(function*() {
            const moved = yield* messages.takeForDispatch(claims)
            yield* counted(moved.map(Option.some))
            const ids = new Set(moved.map((m) => m.id))
            return claims.map((c) => ids.has(c.id))
          }),
        MAX_DISPATCH_BATCH,
        yield* GroupCommit.DispatchWindow
      )

    /**
     * A receipt a connection heard, written with the receipts of the runner's other channels
     * (`ReceiptBatches`); `done` runs once it is recorded.
     */
    const submitReceipt = yield* ReceiptBatches.make(receipts)

    return { move, takeForDispatch, dispatchFailed, throttled, receipts, submitReceipt } as const
  })
}) {}
