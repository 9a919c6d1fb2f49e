/**
 * The Message entity's protocol (the live handlers are in `MessageEntity.ts`).
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { MessageStateMachine, Messaging } from "@switchboard/domain"
import { Schema } from "effect"

/** Moves the message to `to` when its state allows it; answers whether it moved. */
export const Transition = Rpc.make("Transition", {
  payload: {
    to: MessageStateMachine.MessageStatus,
    reason: Schema.optional(Schema.String),
    failure: Schema.optional(Messaging.Failure),
    /** epoch ms when it happened, if earlier than now (a provider receipt's own time) */
    at: Schema.optional(Schema.Number),
    /**
     * `dispatching` only: recipients that must wait for their per-recipient spacing (QR). A
     * dispatch is refused while a more urgent message of the channel is due, except theirs.
     */
    waiting: Schema.optional(Schema.Array(Schema.String))
  },
  success: Schema.Boolean
})

/**
 * The provider refused a dispatch (or the dispatcher died mid-dispatch). Retryable: back to the
 * queue after the next backoff delay (2 s, 8 s, 32 s x `RETRY_DELAY_SCALE`), or failed
 * permanently once the retries are used up. Answers the status the message ended in, if it moved.
 */
export const DispatchFailed = Rpc.make("DispatchFailed", {
  payload: {
    retryable: Schema.Boolean,
    code: Schema.String,
    reason: Schema.String
  },
  success: Schema.OptionFromNullOr(MessageStateMachine.MessageStatus)
})

export const MessageEntity = Entity.make("Message", [Transition, DispatchFailed])
