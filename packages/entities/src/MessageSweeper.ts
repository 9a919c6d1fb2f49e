/**
 * A cluster singleton (one in the whole cluster) that repairs what volatile wake-ups can lose:
 * every second it wakes channels with due queued messages (lost wake-ups, retries coming due,
 * passivated or moved entities), expires messages queued for over 24 h, and re-queues messages
 * whose dispatcher died mid-dispatch (no send stuck for ever; providers de-duplicate by id).
 */
import { Singleton } from "@effect/cluster"
import { MessagesRepo } from "@switchboard/db"
import { toTimestamp } from "@switchboard/domain"
import { Clock, Effect, Schedule } from "effect"
import { ChannelEntity } from "./ChannelEntity.js"
import { MessageEntity } from "./MessageEntity.js"

const EXPIRY_MS = 24 * 3600 * 1000
/** A dispatch takes milliseconds; one still `dispatching` after this lost its dispatcher. */
const STUCK_MS = 20 * 1000

export const sweepOnce = Effect.gen(function*() {
  const messages = yield* MessagesRepo
  const channel = yield* ChannelEntity.client
  const message = yield* MessageEntity.client
  const ignore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.catchAllCause(effect, () => Effect.void)
  const now = yield* Clock.currentTimeMillis

  const due = yield* messages.channelsWithDueWork(1000)
  yield* Effect.forEach(due, (id) => ignore(channel(id).Wake()), { concurrency: 50, discard: true })

  const stale = yield* messages.staleQueued(toTimestamp(now - EXPIRY_MS), 500)
  yield* Effect.forEach(
    stale,
    (id) => ignore(message(id).Transition({ to: "expired", reason: "not dispatched within 24 h" })),
    {
      concurrency: 10,
      discard: true
    }
  )

  const stuck = yield* messages.stuckDispatching(toTimestamp(now - STUCK_MS), 500)
  yield* Effect.forEach(stuck, (m) =>
    ignore(Effect.gen(function*() {
      const failure = {
        class: "retryable",
        code: "dispatch_interrupted",
        reason: "The dispatcher stopped mid-dispatch"
      } as const
      yield* message(m.id).Transition({ to: "failed_retryable", failure, count_attempt: true, reason: failure.reason })
      yield* message(m.id).Transition({ to: "queued", reason: "re-queued after an interrupted dispatch" })
    })), { concurrency: 10, discard: true })
})

export const MessageSweeperLive = Singleton.make(
  "MessageSweeper",
  sweepOnce.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("message sweep failed", cause)),
    Effect.repeat(Schedule.spaced("1 second")),
    Effect.asVoid
  )
)
