/**
 * One entity per message (id = message id): the writer of a message's status for everyone but
 * its channel's dispatcher (`MessageMoves` says why that one moves its messages in process). Each
 * request is one guarded statement (or, a refused dispatch, one transaction), serialised in the
 * entity's mailbox. A transition the current state does not allow is ignored, so a repeated or
 * late report (receipts out of order, a redelivered request) never moves a message back: every
 * handler is idempotent.
 *
 * Short-lived: a message needs its entity for the API's cancellations and the sweeper's repairs.
 */
import { Entity } from "@effect/cluster"
import { DatabaseUnavailable } from "@switchboard/db"
import { Schemas } from "@switchboard/domain"
import { Effect } from "effect"
import { MessageMoves } from "./MessageMoves.js"
import { MessageEntity } from "./MessageProtocol.js"

export const MessageEntityLive = MessageEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const id = address.entityId
    const moves = yield* MessageMoves

    return MessageEntity.of({
      // the protocol declares no database failure: a passing one is a defect for the caller
      Transition: ({ payload }) =>
        DatabaseUnavailable.dieWhenUnavailable(moves.move(id, payload.to, {
          reason: payload.reason,
          failure: payload.failure,
          occurredAt: payload.at === undefined ? undefined : Schemas.toTimestamp(payload.at),
          waitingRecipients: payload.waiting
        })),
      DispatchFailed: ({ payload }) => DatabaseUnavailable.dieWhenUnavailable(moves.dispatchFailed(id, payload))
    })
  }),
  { maxIdleTime: "10 seconds" }
)
