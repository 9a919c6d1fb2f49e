/**
 * The monthly partitions of the history tables (`Partitions`, docs/OPERATING.md "Partitions and
 * retention") as the runner's `PartitionKeeper` looks after them: the months ahead, and retention
 * by whole partitions (never row by row).
 * - webhook deliveries (with their attempts): kept 30 days (`Webhooks.DELIVERY_RETENTION_MS`, the
 *   contract); a month goes once its last delivery is that old;
 * - events: kept for good, or `EVENT_RETENTION_DAYS` when set;
 * - messages (with their timeline): kept for good, or `MESSAGE_RETENTION_DAYS` when set.
 */
import { SqlClient } from "@effect/sql"
import { type Ids, Webhooks } from "@switchboard/domain"
import { Config, ConfigError, Effect, Either, Option } from "effect"
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
export const eventRetentionDays: Config.Config<Option.Option<number>> = Config.suspend(() =>
  optionalDays("EVENT_RETENTION_DAYS", MIN_EVENT_RETENTION_DAYS, "events")
)

/**
 * The least `MESSAGE_RETENTION_DAYS`: as long as a webhook delivery is kept (30 days, the
 * contract), so a delivery's message can still be read; far longer than a message may wait in the
 * queue (a day) or for its receipts.
 */
export const MIN_MESSAGE_RETENTION_DAYS = 30

/**
 * `MESSAGE_RETENTION_DAYS`: days messages and their timeline are kept; unset (the default) keeps
 * them for good. A message made longer ago than that is no longer listed or found (404 with
 * `details.reason = past_retention`), and its month's partition is dropped once its newest message
 * is that old.
 */
export const messageRetentionDays: Config.Config<Option.Option<number>> = Config.suspend(() =>
  optionalDays("MESSAGE_RETENTION_DAYS", MIN_MESSAGE_RETENTION_DAYS, "messages")
)

/** An optional number of days, at least `min`; empty (`NAME=` in a compose file) is unset. */
const optionalDays = (name: string, min: number, what: string): Config.Config<Option.Option<number>> =>
  Config.mapOrFail(Config.option(Config.string(name)), (value) => {
    const text = Option.getOrElse(value, () => "").trim()
    if (text === "") return Either.right(Option.none())
    const days = /^\d+$/.test(text) ? Number(text) : Number.NaN
    return days >= min
      ? Either.right(Option.some(days))
      : Either.left(
        ConfigError.InvalidData(
          [name],
          `Expected a whole number of days >= ${min}, or nothing to keep ${what} for good`
        )
      )
  })

/** How long the history tables' rows are kept, in days (none: for good; `RetentionSettings`). */
export interface HistoryRetention {
  readonly eventDays: Option.Option<number>
  readonly messageDays: Option.Option<number>
}

/** Each partitioned table with how long its rows are kept (ms; none: for good). */
export const retentions = (retention: HistoryRetention) =>
  [
    { layout: Partitions.DELIVERIES, keepMs: Option.some(Webhooks.DELIVERY_RETENTION_MS) },
    { layout: Partitions.EVENTS, keepMs: Option.map(retention.eventDays, (days) => days * DAY_MS) },
    { layout: Partitions.MESSAGES, keepMs: Option.map(retention.messageDays, (days) => days * DAY_MS) }
  ] as const

/**
 * The ids of `prefix` still kept at `now` (epoch ms) when rows are kept `days`, as id bounds
 * (`Partitions.idWindow`): a statement limited to them reads only the partitions of that window.
 */
export const keptIds = (prefix: Ids.IdPrefix, days: number, now: number) =>
  // to the day (`Partitions.idBound`): a row is kept up to a day past its days
  Partitions.idWindow(prefix, Partitions.dayFloor(now - days * DAY_MS), Partitions.dayCeil(now))

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
     * and messages kept as `retention` says (`EVENT_RETENTION_DAYS`, `MESSAGE_RETENTION_DAYS`;
     * none: for good); returns the names dropped.
     */
    const dropExpired = Effect.fn("PartitionsRepo.dropExpired")(
      function*(
        now: number,
        retention: HistoryRetention
      ) {
        const dropped: Array<string> = []
        for (const { keepMs, layout } of retentions(retention)) {
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
