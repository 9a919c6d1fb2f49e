/**
 * A cluster singleton that keeps the monthly partitions of the history tables (docs/OPERATING.md
 * "Partitions and retention", packages/db `Partitions`): every hour (and when it starts) it makes
 * the partitions of the months to come (`Partitions.AHEAD_MONTHS` ahead, so an insert never finds
 * its month missing while this runner is away for weeks) and applies retention by dropping whole
 * partitions, never rows: webhook deliveries recorded more than 30 days ago (the contract), and
 * events and messages (with their timeline) recorded more than `EVENT_RETENTION_DAYS` and
 * `MESSAGE_RETENTION_DAYS` ago when they are set (default: kept; `RetentionSettings`).
 * Each run counts what it made and dropped (`switchboard_sweeper_found_total`, sweeper
 * `partitions`); a run the database refused is tried again by the next one.
 */
import { Singleton } from "@effect/cluster"
import { PartitionsRepo, RetentionSettings } from "@switchboard/db"
import { Clock, Effect, Schedule } from "effect"
import * as Loops from "./Loops.js"
import * as SweeperMetrics from "./SweeperMetrics.js"

/** How often the partitions are looked after: months ahead are made long before they are needed. */
export const INTERVAL = "1 hour"

/** One run: the months ahead, then retention; returns the partitions made and dropped. */
export const keepPartitions = Effect.gen(function*() {
  const partitions = yield* PartitionsRepo.PartitionsRepo
  const retention = yield* RetentionSettings.RetentionSettings
  const now = yield* Clock.currentTimeMillis
  const made = yield* partitions.makeAhead(now)
  const dropped = yield* partitions.dropExpired(now, retention)
  yield* SweeperMetrics.recordFound("partitions", "made_partitions", made.length)
  yield* SweeperMetrics.recordFound("partitions", "dropped_partitions", dropped.length)
  if (made.length > 0 || dropped.length > 0) {
    yield* Effect.logInfo("history partitions kept").pipe(Effect.annotateLogs({ made, dropped }))
  }
  return { made, dropped }
})

export const PartitionKeeperLive = Singleton.make(
  "PartitionKeeper",
  Loops.supervised(
    "partition keeper",
    keepPartitions.pipe(
      SweeperMetrics.counted("partitions"),
      Effect.catchTag("DatabaseUnavailable", (e) => Effect.logWarning("keeping history partitions failed", e)),
      Effect.repeat(Schedule.spaced(INTERVAL))
    )
  )
)
