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
import { dispatchRetryDelayMs, toTimestamp } from "@switchboard/domain"
import { ProvidersConfig } from "@switchboard/providers"
import { Clock, Effect, Option } from "effect"
import { DispatchFailed, MessageEntity } from "./MessageProtocol.js"

export const MessageEntityLive = MessageEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const id = address.entityId
    const transactions = yield* Transactions
    const messages = yield* MessagesRepo
    const { retryDelayScale } = yield* ProvidersConfig.ProvidersConfig

    const dispatchFailed = (payload: typeof DispatchFailed.payloadSchema.Type) =>
      Effect.gen(function*() {
        const failure = {
          class: payload.retryable ? "retryable" : "permanent",
          code: payload.code,
          reason: payload.reason
        } as const
        if (!payload.retryable) {
          const failed = yield* messages.transition(id, "failed_permanent", { failure, reason: payload.reason })
          return Option.map(failed, (t) => t.message.status)
        }
        const failed = yield* messages.transition(id, "failed_retryable", {
          failure,
          countAttempt: true,
          reason: payload.reason
        })
        if (Option.isNone(failed)) return Option.none()
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
        return Option.map(next, (t) => t.message.status)
      })

    return MessageEntity.of({
      Transition: ({ payload }) =>
        transactions.run(
          messages.transition(id, payload.to, {
            reason: payload.reason,
            failure: payload.failure,
            occurredAt: payload.at === undefined ? undefined : toTimestamp(payload.at)
          })
        ).pipe(Effect.map(Option.isSome)),
      DispatchFailed: ({ payload }) => transactions.run(dispatchFailed(payload))
    })
  }),
  { maxIdleTime: "10 seconds" }
)
