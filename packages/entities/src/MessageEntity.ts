/**
 * One entity per message (id = message id): the only writer of a message's status after it was
 * queued. Each request is applied as ONE guarded transaction (row lock, allowed from-state,
 * update, timeline row, event row), serialised in the entity's mailbox. A transition the current
 * state does not allow is ignored, so a repeated or late report (receipts out of order, a
 * redelivered request) never moves a message back: every handler is idempotent.
 *
 * Short-lived: a message needs its entity for a few seconds of dispatch and receipts.
 */
import { Entity } from "@effect/cluster"
import { MessagesRepo, Transactions } from "@switchboard/db"
import type { Transitioned } from "@switchboard/db"
import { dispatchRetryDelayMs, toTimestamp } from "@switchboard/domain"
import { ProvidersConfig } from "@switchboard/providers"
import { Clock, Effect, Option } from "effect"
import { DispatchFailed, MessageEntity } from "./MessageProtocol.js"
import * as MessagingMetrics from "./MessagingMetrics.js"

/** Counts the status changes a committed transaction made (a rolled-back one counts nothing). */
const counted = (moves: ReadonlyArray<Option.Option<Transitioned>>) =>
  Effect.forEach(
    moves,
    (move) =>
      Option.isSome(move)
        ? MessagingMetrics.recordTransition(move.value.message.status, move.value.provider)
        : Effect.void,
    { discard: true }
  )

export const MessageEntityLive = MessageEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const id = address.entityId
    const transactions = yield* Transactions
    const messages = yield* MessagesRepo
    const { retryDelayScale } = yield* ProvidersConfig.ProvidersConfig

    /** Every transition it made, in order; the message's status after the last. */
    const dispatchFailed = (payload: typeof DispatchFailed.payloadSchema.Type) =>
      Effect.gen(function*() {
        const failure = {
          class: payload.retryable ? "retryable" : "permanent",
          code: payload.code,
          reason: payload.reason
        } as const
        if (!payload.retryable) {
          const failed = yield* messages.transition(id, "failed_permanent", { failure, reason: payload.reason })
          return [failed]
        }
        const failed = yield* messages.transition(id, "failed_retryable", {
          failure,
          countAttempt: true,
          reason: payload.reason
        })
        if (Option.isNone(failed)) return [failed]
        const now = yield* Clock.currentTimeMillis
        const next = yield* Option.match(dispatchRetryDelayMs(failed.value.attempts, retryDelayScale), {
          onNone: () =>
            messages.transition(id, "failed_permanent", {
              failure: { ...failure, class: "permanent" },
              reason: `gave up after ${failed.value.attempts} attempts`
            }),
          onSome: (delay) => {
            const at = toTimestamp(now + delay)
            return messages.transition(id, "queued", { nextAttemptAt: at, reason: `retry at ${at}` })
          }
        })
        return [failed, next]
      })

    return MessageEntity.of({
      Transition: ({ payload }) =>
        transactions.run(
          messages.transition(id, payload.to, {
            reason: payload.reason,
            failure: payload.failure,
            occurredAt: payload.at === undefined ? undefined : toTimestamp(payload.at),
            waitingRecipients: payload.waiting
          })
        ).pipe(Effect.tap((moved) => counted([moved])), Effect.map(Option.isSome)),
      DispatchFailed: ({ payload }) =>
        transactions.run(dispatchFailed(payload)).pipe(
          Effect.tap(counted),
          Effect.map((moves) => Option.map(moves[moves.length - 1]!, (t) => t.message.status))
        )
    })
  }),
  { maxIdleTime: "10 seconds" }
)
