/**
 * The monthly partitions of the history tables (`Partitions`, docs/OPERATING.md "Partitions and
 * retention") as the runner's `PartitionKeeper` looks after them: the months ahead, and retention
 * by whole partitions (never row by row).
 * - webhook deliveries (with their attempts): kept 30 days (`Webhooks.DELIVERY_RETENTION_MS`, the
 *   contract); a month goes once its last delivery is that old;
 * - events: kept for good, or `EVENT_RETENTION_DAYS` when set.
 */
import { SqlClient } from "@effect/sql"
import { Webhooks } from "@switchboard/domain"
import { Config, Effect, Option } from "effect"
import * as Partitions from "./Partitions.js"
import { dieOnDatabaseError } from "./Rows.js"

const DAY_MS = 24 * 3600 * 1000

/**
 * The least `EVENT_RETENTION_DAYS`: twice the delivery retention and a month's partition more, so
 * an event outlives every delivery of it, a replay of a 30-day-old delivery included.
 */
export const MIN_EVENT_RETENTION_DAYS = 90

/**
 * `EVENT_RETENTION_DAYS`: days the events (the outbox every webhook delivery sends) are kept;
 * unset (the default) keeps them for good. A month's partition is dropped once its newest event is
 * that old.
 */
export const eventRetentionDays = Config.option(
  Config.integer("EVENT_RETENTION_DAYS").pipe(
    Config.validate({
      message: `Expected a whole number of days >= ${MIN_EVENT_RETENTION_DAYS}`,
      validation: (n) => n >= MIN_EVENT_RETENTION_DAYS
    })
  )
)

/** Each partitioned table with how long its rows are kept (ms; none: for good). */
export const retentions = (eventDays: Option.Option<number>) =>
  [
    { layout: Partitions.DELIVERIES, keepMs: Option.some(Webhooks.DELIVERY_RETENTION_MS) },
    { layout: Partitions.EVENTS, keepMs: Option.map(eventDays, (days) => days * DAY_MS) }
  ] as const

export class PartitionsRepo extends Effect.Service<PartitionsRepo>()("@switchboard/db/PartitionsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Makes the months ahead of every partitioned table (`Partitions.ensure`); returns the names made. */
    const makeAhead = Effect.fn("PartitionsRepo.makeAhead")(
      function*(now: number) {
        const made: Array<string> = []
        for (const layout of Partitions.LAYOUTS) made.push(...(yield* Partitions.ensure(layout, now)))
        return made
      },
      Effect.provideService(SqlClient.SqlClient, sql),
      dieOnDatabaseError
    )

    /**
     * Drops the partitions past their table's retention at `now` (`Partitions.dropBefore`), events
     * kept `eventDays` (`EVENT_RETENTION_DAYS`; none: for good); returns the names dropped.
     */
    const dropExpired = Effect.fn("PartitionsRepo.dropExpired")(
      function*(
        now: number,
        eventDays: Option.Option<number>
      ) {
        const dropped: Array<string> = []
        for (const { keepMs, layout } of retentions(eventDays)) {
          if (Option.isSome(keepMs)) dropped.push(...(yield* Partitions.dropBefore(layout, now - keepMs.value)))
        }
        return dropped
      },
      Effect.provideService(SqlClient.SqlClient, sql),
      dieOnDatabaseError
    )

    /** The partitions of `table`, lowest first. */
    const list = Effect.fn("PartitionsRepo.list")(
      function*(table: string) {
        return yield* Partitions.partitions(table)
      },
      Effect.provideService(SqlClient.SqlClient, sql),
      dieOnDatabaseError
    )

    return { makeAhead, dropExpired, list } as const
  })
}) {}
