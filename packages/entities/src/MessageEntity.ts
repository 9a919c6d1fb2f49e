/**
 * One entity per message: the only writer of its status. Each `Transition` is serialised in the
 * entity's mailbox and applied as ONE guarded transaction (status check, update, timeline row,
 * event row); a transition the current state does not allow is ignored, so repeated or late
 * reports (receipts out of order, a redelivered request) never move a message back.
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { SqlClient } from "@effect/sql"
import { MessagesRepo } from "@switchboard/db"
import { Failure, MessageStatus } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"

export const Transition = Rpc.make("Transition", {
  payload: {
    to: MessageStatus,
    reason: Schema.optional(Schema.String),
    failure: Schema.optional(Failure),
    next_attempt_at: Schema.optional(Schema.String),
    count_attempt: Schema.optional(Schema.Boolean)
  },
  /** whether the message moved */
  success: Schema.Boolean
})

export const MessageEntity = Entity.make("Message", [Transition])

export const MessageEntityLive = MessageEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const sql = yield* SqlClient.SqlClient
    const messages = yield* MessagesRepo
    return MessageEntity.of({
      Transition: ({ payload }) =>
        sql.withTransaction(
          messages.transition(address.entityId, payload.to, {
            reason: payload.reason,
            failure: payload.failure,
            nextAttemptAt: payload.next_attempt_at,
            countAttempt: payload.count_attempt
          })
        ).pipe(Effect.map(Option.isSome), Effect.orDie)
    })
  }),
  { maxIdleTime: "10 seconds" }
)
