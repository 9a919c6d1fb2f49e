/**
 * A cluster singleton (one in the whole cluster) that repairs what volatile wake-ups and dead
 * runners can lose. Every second (`sweepDue`) it wakes channels with due queued messages that did
 * not move on since the last sweep (a lost wake-up, a retry coming due, a passivated or moved
 * entity; `stalledChannels`). Every `REPAIR_EVERY` (10 s; at once when it starts) it
 * (`sweepRepairs`):
 * - wakes channels whose messages have had no further receipt for a while: accepted but not
 *   `sent`, or `sent` / `delivered` but not `read` (the connection that would report them went
 *   away with a runner, receipt timers and all; the woken channel reconnects and hears them);
 * - fails messages the provider took and never acknowledged within `PROVIDER_ACK_TIMEOUT_MS`
 *   (`provider_ack_timeout`): none waits in `provider_accepted` for ever;
 * - returns messages left `dispatching` by a dead dispatcher to the queue (a retryable failure;
 *   providers recognise our message id, so nothing is sent twice);
 * - cancels undispatched messages of archived channels (the archive's own cancellations were lost);
 * - expires messages queued for over 24 h.
 * Its first sweep reads every month of messages (what waited while no sweeper ran); once a sweep
 * that did found nothing older than `SWEEP_HORIZON_MS` still to settle, later sweeps read only the
 * messages made since then, so the partitions of those days (`horizonAfter`).
 * Every step goes through the Message entity (docs/ARCHITECTURE.md "Architecture": one writer per message, by statement).
 *
 * It also samples the dispatch lag for metrics (`MessagingMetrics`), at most every `LAG_EVERY`:
 * one query, on the one runner that holds this singleton.
 */
import { Singleton } from "@effect/cluster"
import { DispatchQueueRepo, SandboxNetworkRepo } from "@switchboard/db"
import { Ids, MessageStateMachine, Schemas } from "@switchboard/domain"
import { Clock, Duration, Effect, Ref, Schedule } from "effect"
import { ChannelEntity } from "./ChannelProtocol.js"
import * as Loops from "./Loops.js"
import { MessageEntity } from "./MessageProtocol.js"
import * as MessagingMetrics from "./MessagingMetrics.js"
import * as SweeperMetrics from "./SweeperMetrics.js"

/** A dispatch takes milliseconds (or up to ~30 s of retries during a failover); one still `dispatching` after this lost its dispatcher. */
export const STUCK_DISPATCH_MS = 45_000
/** A provider reports `sent` within seconds of accepting. */
export const RECEIPT_OVERDUE_MS = 30_000
/** Receipts overdue for longer than this are not waited for any more. */
const RECEIPT_GIVE_UP_MS = 3600_000
/**
 * A message stopped at `sent` or `delivered` has its channel woken for this long: enough for a
 * failover; after it the recipient may simply not have read it (read receipts off).
 */
const LATER_RECEIPTS_REPAIR_MS = 300_000

const BATCH = 500

/**
 * How far back a sweep looks for messages to settle once a sweep of every month left none older:
 * a message is settled within a day of being made (it is sent, fails or expires then) while
 * sweeps run; a week leaves room to spare. The later sweeps read only the partitions of these days
 * (docs/OPERATING.md "Partitions and retention").
 */
export const SWEEP_HORIZON_MS = 7 * 24 * 3600 * 1000

/**
 * How often the repairs run (`sweepRepairs`): a message stuck `dispatching` is returned to the queue
 * 45-55 s after its dispatch stopped, an overdue receipt looked for 30-40 s after it (10-20 s for the
 * sandbox network's), an archived channel's leftovers cancelled within 10 s.
 */
export const REPAIR_EVERY = Duration.seconds(10)

/** How often the dispatch lag is sampled (Prometheus scrapes every 15 s or so). */
export const LAG_EVERY = Duration.seconds(5)

const found = (kind: string, items: ReadonlyArray<unknown>) =>
  SweeperMetrics.recordFound("messages", kind, items.length)

/** Where the next sweep's pages of channels start: the last channel id woken, "" from the first. */
export interface SweepCursors {
  readonly due: Ref.Ref<string>
  readonly awaiting: Ref.Ref<string>
  /** per channel with due work, its head when the sweep last looked (`stalledChannels`) */
  readonly dueHeads: Map<string, string>
  /**
   * whether a sweep read every month and left nothing older than `SWEEP_HORIZON_MS` to settle
   * (`horizonAfter`); a failed sweep sets it back (what it missed may grow older than that)
   */
  readonly settled: Ref.Ref<boolean>
}

/**
 * Whether later sweeps may read only the horizon's messages, after a sweep of every month at `now`
 * found `found` (the ids each of its reads of messages to settle answered) and a full page of
 * channels awaiting receipts (`fullPage`: more to read) or not: each read came back short (nothing
 * left unread) and every message found was made within the horizon, so a message older than it
 * that could not be settled now (its entity failed) is looked for again by the next sweep of every
 * month. Pure: tested with plain values.
 */
export const horizonAfter = (
  now: number,
  found: ReadonlyArray<ReadonlyArray<string>>,
  fullPage: boolean
): boolean =>
  !fullPage &&
  found.every((ids) => ids.length < BATCH && ids.every((id) => (Ids.idTime(id) ?? 0) >= now - SWEEP_HORIZON_MS))

/**
 * The channels of a page of due work (`channelsWithDueWork`, after `after`; `short`: the last
 * page) to wake: those whose head, the first message they would dispatch, is where the sweep's
 * last look found it, a second ago. A channel that dispatched since has a new head: its loop is
 * working, and a wake-up would only make it read its queue again. Waking every channel with due
 * work was a Wake request, a channel read and a queue read per busy channel a second, half of a
 * runner's statements at 100 channels dispatching flat out (bench/RESULTS.md 3, "The sweeper wakes
 * only stalled channels"); a lost wake-up now waits one sweep more. `seen` is updated: the page's
 * heads replace what it held for the page's range of ids.
 */
export const stalledChannels = (
  seen: Map<string, string>,
  page: ReadonlyArray<{ readonly channelId: string; readonly head: string }>,
  after: string,
  short: boolean
): ReadonlyArray<string> => {
  const stalled = page.filter((c) => seen.get(c.channelId) === c.head).map((c) => c.channelId)
  const last = page.length > 0 ? page[page.length - 1]!.channelId : after
  for (const id of seen.keys()) {
    if (id > after && (short || id <= last)) seen.delete(id)
  }
  for (const c of page) seen.set(c.channelId, c.head)
  return stalled
}

/** The cursor after a page: its last id, or back to the first channel after a short page. */
const advance = (cursor: Ref.Ref<string>, page: ReadonlyArray<string>) =>
  Ref.set(cursor, page.length < BATCH ? "" : page[page.length - 1]!)

const ignore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.catchAllCause(effect, () => Effect.void)

/**
 * The sweep of every second: wakes the channels with due work that did not move on (lost wake-ups,
 * retries coming due). Channels to wake are taken a page at a time after the cursor, so with more
 * than a page of them every one is reached, not the same first page every second.
 */
export const sweepDue = (cursors: SweepCursors) =>
  Effect.gen(function*() {
    const queue = yield* DispatchQueueRepo.DispatchQueueRepo
    const channel = yield* ChannelEntity.client
    const dueAfter = yield* Ref.get(cursors.due)
    const duePage = yield* queue.channelsWithDueWork(BATCH, dueAfter)
    yield* advance(cursors.due, duePage.map((c) => c.channelId))
    const due = stalledChannels(cursors.dueHeads, duePage, dueAfter, duePage.length < BATCH)
    yield* found("due_channels", due)
    yield* Effect.forEach(due, (id) => ignore(channel(id).Wake()), { concurrency: 50, discard: true })
  })

/**
 * The repairs, every `REPAIR_EVERY`: what they look for is overdue by 10 s at the least (a receipt
 * the sandbox network reported), most by 30 s to 24 h, so a sweep a second found the same nothing
 * ten times over (an idle runner's statements: bench/RESULTS.md 19).
 */
export const sweepRepairs = (cursors: SweepCursors) =>
  Effect.gen(function*() {
    const queue = yield* DispatchQueueRepo.DispatchQueueRepo
    const network = yield* SandboxNetworkRepo.SandboxNetworkRepo
    const channel = yield* ChannelEntity.client
    const message = yield* MessageEntity.client
    const now = yield* Clock.currentTimeMillis
    // every month until a sweep of every month settled all older than the horizon
    const settled = yield* Ref.get(cursors.settled)
    const madeSince = settled ? now - SWEEP_HORIZON_MS : undefined

    const awaiting = yield* queue.channelsAwaitingReceipts({
      overdueBefore: Schemas.toTimestamp(now - RECEIPT_OVERDUE_MS),
      acceptedAfter: Schemas.toTimestamp(now - RECEIPT_GIVE_UP_MS),
      laterStagesAfter: Schemas.toTimestamp(now - LATER_RECEIPTS_REPAIR_MS),
      limit: BATCH,
      after: yield* Ref.get(cursors.awaiting),
      madeSince
    })
    yield* advance(cursors.awaiting, awaiting)
    yield* found("channels_awaiting_receipts", awaiting)
    yield* Effect.forEach(awaiting, (id) => ignore(channel(id).Wake()), { concurrency: 50, discard: true })

    // receipts the durable network reported but the message never recorded (lost with a runner)
    const missed = yield* network.missedReceipts(
      Schemas.toTimestamp(now - RECEIPT_OVERDUE_MS / 3),
      Schemas.toTimestamp(now - RECEIPT_GIVE_UP_MS),
      BATCH
    )
    yield* found("missed_receipts", missed)
    yield* Effect.forEach(missed, (r) => ignore(message(r.messageId).Transition({ to: r.stage, at: r.at })), {
      concurrency: 10,
      discard: true
    })

    const stuck = yield* queue.stuckDispatching(Schemas.toTimestamp(now - STUCK_DISPATCH_MS), BATCH, madeSince)
    yield* found("stuck_dispatching", stuck)
    yield* Effect.forEach(
      stuck,
      (m) =>
        ignore(
          message(m.id).DispatchFailed({
            retryable: true,
            code: "dispatch_interrupted",
            reason: "The dispatcher stopped mid-dispatch"
          })
        ),
      { concurrency: 10, discard: true }
    )

    const unacknowledged = yield* queue.unacknowledged(
      Schemas.toTimestamp(now - MessageStateMachine.PROVIDER_ACK_TIMEOUT_MS),
      BATCH,
      madeSince
    )
    yield* found("unacknowledged", unacknowledged)
    yield* Effect.forEach(
      unacknowledged,
      (id) =>
        ignore(
          message(id).DispatchFailed({
            retryable: false,
            code: MessageStateMachine.PROVIDER_ACK_TIMEOUT,
            reason: `The provider never acknowledged it within ${
              MessageStateMachine.PROVIDER_ACK_TIMEOUT_MS / 60_000
            } minutes; not re-sent`
          })
        ),
      { concurrency: 10, discard: true }
    )

    const orphaned = yield* queue.undispatchedOfArchived(BATCH, madeSince)
    yield* found("archived_channel_messages", orphaned)
    yield* Effect.forEach(
      orphaned,
      (id) => ignore(message(id).Transition({ to: "cancelled", reason: "channel archived" })),
      { concurrency: 10, discard: true }
    )

    const stale = yield* queue.staleQueued(
      Schemas.toTimestamp(now - MessageStateMachine.QUEUED_EXPIRY_MS),
      BATCH,
      madeSince
    )
    yield* found("expired", stale)
    yield* Effect.forEach(
      stale,
      (id) => ignore(message(id).Transition({ to: "expired", reason: "not dispatched within 24 h" })),
      { concurrency: 10, discard: true }
    )
    if (!settled) {
      yield* Ref.set(
        cursors.settled,
        horizonAfter(now, [stuck.map((m) => m.id), unacknowledged, orphaned, stale], awaiting.length === BATCH)
      )
    }
  })

/** Samples the dispatch lag into the metrics (`MessagingMetrics`). */
export const sampleLag = Effect.gen(function*() {
  const queue = yield* DispatchQueueRepo.DispatchQueueRepo
  const backlog = yield* queue.backlog()
  const now = yield* Clock.currentTimeMillis
  yield* MessagingMetrics.recordLag(backlog.map((c) => ({ ageSeconds: (now - c.oldest) / 1000, queued: c.queued })))
})

export const MessageSweeperLive = Singleton.make(
  "MessageSweeper",
  Loops.supervised(
    "message sweeper",
    Effect.gen(function*() {
      const cursors = {
        due: yield* Ref.make(""),
        awaiting: yield* Ref.make(""),
        dueHeads: new Map<string, string>(),
        settled: yield* Ref.make(false)
      }
      // the runner that takes this singleton over reports the lag from then on
      yield* Effect.addFinalizer(() => MessagingMetrics.clearLag)
      const lag = yield* Loops.atMostEvery(LAG_EVERY, sampleLag)
      // the first sweep repairs at once: what waited while no runner held the sweeper
      const repairs = yield* Loops.atMostEvery(REPAIR_EVERY, sweepRepairs(cursors))
      return yield* sweepDue(cursors).pipe(
        Effect.zipRight(repairs),
        SweeperMetrics.counted("messages"),
        Effect.zipRight(lag),
        Effect.catchAllCause((cause) =>
          Effect.zipRight(Ref.set(cursors.settled, false), Effect.logWarning("message sweep failed", cause))
        ),
        Effect.repeat(Schedule.spaced("1 second")),
        Effect.asVoid
      )
    }).pipe(Effect.scoped)
  )
)
