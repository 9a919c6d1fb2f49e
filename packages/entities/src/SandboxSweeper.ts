/**
 * A cluster singleton that ends sandbox sessions past their expiry (72 h), every 10 seconds:
 * records them `expired` (their numbers return to the pool), then archives the channel of every
 * ended session (expired, or revoked when the revoke's own archive was lost) with its
 * `channel.archived` event, and wakes the channel so its entity drops the connection. The message
 * sweeper then cancels what the archived channel had not dispatched. Allocation also expires
 * sessions under its lock, so a number is never refused (or taken twice) while a sweep is due.
 */
import { Singleton } from "@effect/cluster"
import { ChannelsRepo, SandboxRepo } from "@switchboard/db"
import { Schemas } from "@switchboard/domain"
import { Clock, Effect, Schedule } from "effect"
import { ChannelEntity } from "./ChannelProtocol.js"
import * as Loops from "./Loops.js"
import * as SweeperMetrics from "./SweeperMetrics.js"

const BATCH = 200

/** One sweep: how many sessions it expired and how many channels it archived. */
export const sweepSandboxSessions = Effect.gen(function*() {
  const sessions = yield* SandboxRepo.SandboxRepo
  const channels = yield* ChannelsRepo.ChannelsRepo
  const channel = yield* ChannelEntity.client
  const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
  const expired = yield* sessions.expire(now)
  const ended = yield* sessions.endedWithLiveChannel(BATCH)
  let archived = 0
  for (const session of ended) {
    if (yield* channels.archiveWithEvents(session.channel_id, now)) archived++
    yield* channel(session.channel_id).Wake().pipe(Effect.catchAllCause(() => Effect.void))
  }
  if (expired.length > 0 || archived > 0) {
    yield* Effect.logInfo("sandbox sessions ended").pipe(
      Effect.annotateLogs({ expired: expired.length, channels_archived: archived })
    )
  }
  yield* SweeperMetrics.recordFound("sandbox", "expired_sessions", expired.length)
  yield* SweeperMetrics.recordFound("sandbox", "archived_channels", archived)
  return { expired: expired.length, archived }
})

export const SandboxSweeperLive = Singleton.make(
  "SandboxSweeper",
  Loops.supervised(
    "sandbox sweeper",
    sweepSandboxSessions.pipe(
      SweeperMetrics.counted("sandbox"),
      Effect.catchAllCause((cause) => Effect.logWarning("sandbox sweep failed", cause)),
      Effect.repeat(Schedule.spaced("10 seconds")),
      Effect.asVoid
    )
  )
)
