/**
 * The Channel entity's volatile calls to Message entities (dispatch outcomes, receipts) and their
 * retry schedules. A Message entity on a runner that just died answers again after the failover
 * (7-10 s), so a call keeps trying for a while; such a failure can surface as a
 * defect. Given up, the sweeper repairs what is left.
 */
import type { ReceiptStatus } from "@switchboard/domain"
import { Effect, Option, Schedule } from "effect"
import { MessageEntity } from "./MessageProtocol.js"

/** Retries of a call to a Message entity: about 30 s, enough to outlast a runner failover. */
const MESSAGE_CALL_RETRY = Schedule.exponential("200 millis").pipe(
  Schedule.either(Schedule.spaced("3 seconds")),
  Schedule.upTo("30 seconds")
)

/** Retries of a receipt's report to its Message entity: for as long as the connection lives. */
const RECEIPT_RETRY = Schedule.exponential("200 millis").pipe(Schedule.either(Schedule.spaced("3 seconds")))

export const makeMessageCalls = Effect.gen(function*() {
  const messageClient = yield* MessageEntity.client

  const toMessage = <A>(
    id: string,
    call: Effect.Effect<A, unknown>,
    fallback: A,
    retry: Schedule.Schedule<unknown, unknown> = MESSAGE_CALL_RETRY
  ) =>
    call.pipe(
      Effect.catchAllDefect(Effect.fail),
      Effect.retry(retry),
      Effect.catchAllCause((cause) =>
        Effect.logWarning("message entity not reached").pipe(
          Effect.annotateLogs({ message_id: id, cause: String(cause) }),
          Effect.as(fallback)
        )
      )
    )

  return {
    /**
     * Takes the message for a dispatch in the send slot at `at` (answers whether it moved; false when
     * refused or not reached). Refused while a more urgent message of the channel is due, except
     * those to `waiting` recipients (QR spacing).
     */
    dispatching: (id: string, at: number, waiting: ReadonlyArray<string>) =>
      toMessage(
        id,
        messageClient(id).Transition(
          waiting.length > 0 ? { to: "dispatching", at, waiting } : { to: "dispatching", at }
        ),
        false
      ),
    /** The provider took the message (answers whether it moved; false when not reached). */
    providerAccepted: (id: string) => toMessage(id, messageClient(id).Transition({ to: "provider_accepted" }), false),
    /** The provider refused the dispatch: the Message entity re-queues it or fails it. */
    dispatchFailed: (id: string, refusal: { retryable: boolean; code: string; reason: string }) =>
      Effect.asVoid(toMessage(
        id,
        messageClient(id).DispatchFailed({ retryable: refusal.retryable, code: refusal.code, reason: refusal.reason }),
        Option.none()
      )),
    /** A receipt is not given up while the connection lives: a provider may not tell it again. */
    receipt: (id: string, status: ReceiptStatus, at: number) =>
      Effect.asVoid(toMessage(id, messageClient(id).Transition({ to: status, at }), false, RECEIPT_RETRY))
  }
})
