/**
 * A cluster singleton that wakes endpoints with due deliveries: new ones at once (Postgres tells
 * it at commit, `EventsRepo.append`), and every second the rest (retries coming due, lost
 * wake-ups); every `STUCK_EVERY` (10 s) returns deliveries left `delivering` by a dead runner to
 * the queue. Deliveries older
 * than the 30-day retention (a long-paused endpoint's held ones included) are neither read nor
 * pulled any more (`WebhookDeliveriesRepo.retained`), and go with their month's partition
 * (`PartitionKeeper`).
 */
import { Singleton } from "@effect/cluster"
import { EventsRepo, Notifications, WebhookDeliveriesRepo } from "@switchboard/db"
import { Schemas } from "@switchboard/domain"
import { Clock, Duration, Effect, Option, Schedule, Stream } from "effect"
import * as Loops from "./Loops.js"
import * as SweeperMetrics from "./SweeperMetrics.js"
import { WebhookEndpointEntity } from "./WebhookEndpointProtocol.js"

/** An attempt takes at most 10 s; one still `delivering` after this lost its runner. */
const STUCK_MS = 20_000

/**
 * How often deliveries left `delivering` are looked for: one is handed out again 20-30 s after its
 * attempt started (the sweep for due endpoints runs every second).
 */
export const STUCK_EVERY = Duration.seconds(10)

/** Returns deliveries left `delivering` for over `STUCK_MS` to the queue. */
export const requeueStuck = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
  const now = yield* Clock.currentTimeMillis
  const stuck = yield* deliveries.requeueStuck(Schemas.toTimestamp(now - STUCK_MS), Schemas.toTimestamp(now))
  yield* SweeperMetrics.recordFound("webhooks", "stuck_deliveries", stuck)
})

/** Wakes the endpoints with due deliveries (retries coming due, lost wake-ups). */
export const sweepWebhooks = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
  const endpoint = yield* WebhookEndpointEntity.client
  const now = yield* Clock.currentTimeMillis
  const due = yield* deliveries.endpointsWithDueWork(Schemas.toTimestamp(now), 1000)
  yield* SweeperMetrics.recordFound("webhooks", "due_endpoints", due.length)
  yield* Effect.forEach(due, (id) => endpoint(id).Wake().pipe(Effect.catchAllCause(() => Effect.void)), {
    concurrency: 50,
    discard: true
  })
})

/**
 * Wakes each endpoint that got new deliveries as their transactions commit (batched per 10 ms, one
 * wake-up per endpoint). Only on a Postgres server: listening takes a connection of its own, and
 * the embedded database has one (it relies on the poll).
 */
export const wakeOnNewDeliveries = Effect.gen(function*() {
  const notifications = yield* Notifications.listen(EventsRepo.WEBHOOK_WAKE_CHANNEL)
  if (Option.isNone(notifications)) return yield* Effect.never
  const endpoint = yield* WebhookEndpointEntity.client
  yield* notifications.value.pipe(
    Stream.groupedWithin(1000, "10 millis"),
    Stream.runForEach((ids) =>
      Effect.forEach(new Set(ids), (id) => endpoint(id).Wake().pipe(Effect.catchAllCause(() => Effect.void)), {
        concurrency: 50,
        discard: true
      })
    )
  )
})

export const WebhookSweeperLive = Singleton.make(
  "WebhookSweeper",
  Loops.supervised(
    "webhook sweeper",
    Effect.gen(function*() {
      const stuck = yield* Loops.atMostEvery(STUCK_EVERY, requeueStuck)
      yield* Effect.all([
        Loops.relistening("listening for new webhook deliveries failed", wakeOnNewDeliveries),
        stuck.pipe(
          Effect.zipRight(sweepWebhooks),
          SweeperMetrics.counted("webhooks"),
          Effect.catchAllCause((cause) => Effect.logWarning("webhook sweep failed", cause)),
          Effect.repeat(Schedule.spaced("1 second"))
        )
      ], { concurrency: "unbounded", discard: true })
    })
  )
)
