import { Clock, Effect } from "effect"
import * as Partitions from "../Partitions.js"

/**
 * Events (the outbox) in monthly partitions by id (docs/OPERATING.md "Partitions and retention"):
 * the existing table becomes the first partition (`events_before`: every event id before next
 * month), the months ahead are made. With `EVENT_RETENTION_DAYS` set, retention drops a month's
 * partition instead of deleting rows. No foreign key points at events since 0150.
 */
export default Effect.gen(function*() {
  const now = yield* Clock.currentTimeMillis
  const upper = yield* Partitions.firstUpperBound("evt", [["events", "id"]], now)
  yield* Partitions.partitionExisting("events", "id", upper)
  yield* Partitions.ensure(Partitions.EVENTS, now)
})
