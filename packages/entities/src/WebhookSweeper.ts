/**
 * A cluster singleton that wakes endpoints with due deliveries (new events, retries coming due,
 * lost wake-ups), returns deliveries left `delivering` by a dead runner to the queue, and purges
 * deliveries older than 30 days.
 */
import { Singleton } from "@effect/cluster"
import { WebhookDeliveriesRepo } from "@switchboard/db"
import { DELIVERY_RETENTION_MS, toTimestamp } from "@switchboard/domain"
import { Clock, Effect, Schedule } from "effect"
import { WebhookEndpointEntity } from "./WebhookEndpointEntity.js"

/** An attempt takes at most 10 s; one still `delivering` after this lost its runner. */
const STUCK_MS = 20_000

export const sweepWebhooks = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveriesRepo
  const endpoint = yield* WebhookEndpointEntity.client
  const now = yield* Clock.currentTimeMillis
  yield* deliveries.requeueStuck(toTimestamp(now - STUCK_MS), toTimestamp(now))
  const due = yield* deliveries.endpointsWithDueWork(toTimestamp(now), 1000)
  yield* Effect.forEach(due, (id) => endpoint(id).Wake().pipe(Effect.catchAllCause(() => Effect.void)), {
    concurrency: 50,
    discard: true
  })
})

export const purgeDeliveries = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveriesRepo
  const now = yield* Clock.currentTimeMillis
  const purged = yield* deliveries.purge(toTimestamp(now - DELIVERY_RETENTION_MS))
  if (purged > 0) yield* Effect.logInfo("purged old webhook deliveries").pipe(Effect.annotateLogs("count", purged))
})

export const WebhookSweeperLive = Singleton.make(
  "WebhookSweeper",
  Effect.all([
    sweepWebhooks.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("webhook sweep failed", cause)),
      Effect.repeat(Schedule.spaced("1 second"))
    ),
    purgeDeliveries.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("webhook purge failed", cause)),
      Effect.repeat(Schedule.spaced("10 minutes"))
    )
  ], { concurrency: "unbounded", discard: true })
)
