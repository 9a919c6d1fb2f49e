/**
 * The runner's partition keeper (docs/OPERATING.md "Partitions and retention"): one run makes the
 * months ahead and drops what is past retention, a second run at the same time changes nothing,
 * and `EVENT_RETENTION_DAYS` / `MESSAGE_RETENTION_DAYS` decide whether events and messages go at all.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Partitions, PartitionsRepo, RetentionSettings } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids } from "@switchboard/domain"
import { PartitionKeeper } from "@switchboard/entities"
import { ConfigProvider, Effect, Exit, Layer, TestClock } from "effect"

const TestLayer = PartitionsRepo.PartitionsRepo.Default.pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const names = (table: string) => Effect.map(Partitions.partitions(table), (list) => list.map((p) => p.name))

/** One run with these settings in the environment, read as a process reads them (`RetentionSettings`). */
const keepWith = (settings: Record<string, string>) =>
  PartitionKeeper.keepPartitions.pipe(
    Effect.provide(RetentionSettings.layerFromEnv),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(settings))))
  )

describe("PartitionKeeper", () => {
  layer(TestLayer, { timeout: 120_000 })((it) => {
    it.effect("makes the months ahead, drops what is past retention, and a second run changes nothing", () =>
      Effect.gen(function*() {
        const first = (yield* Partitions.partitions("webhook_deliveries"))[0]!
        // five months after the first partition's end: it and the next months are over 30 days old
        const now = Partitions.addMonths(Ids.idTime(first.to)!, 5) + 3 * 24 * 3600 * 1000
        yield* TestClock.setTime(now)

        const kept = yield* keepWith({})
        const ahead = Partitions.partitionName(
          "webhook_deliveries",
          Partitions.addMonths(Partitions.monthStart(now), 3)
        )
        assert.include(kept.made, ahead)
        assert.include(kept.made, ahead.replace("webhook_deliveries", "webhook_attempts"))
        assert.include(kept.made, ahead.replace("webhook_deliveries", "events"))
        assert.includeMembers(kept.dropped, ["webhook_deliveries_before", "webhook_attempts_before"])
        const deliveries = yield* names("webhook_deliveries")
        // the month before now's and later stay: the previous month still holds deliveries of the last 30 days
        assert.strictEqual(deliveries[0], Partitions.partitionName("webhook_deliveries", Partitions.addMonths(now, -1)))
        assert.strictEqual(deliveries.at(-1), ahead)
        // events are kept for good without EVENT_RETENTION_DAYS
        assert.strictEqual((yield* names("events"))[0], "events_before")

        assert.deepStrictEqual(yield* keepWith({}), { made: [], dropped: [] })

        const events = yield* keepWith({ EVENT_RETENTION_DAYS: "90" })
        assert.include(events.dropped, "events_before")
        assert.notInclude(yield* names("events"), "events_before")
        // messages too are kept for good until MESSAGE_RETENTION_DAYS is set; then their
        // partitions go with their timeline's
        assert.strictEqual((yield* names("messages"))[0], "messages_before")
        const messages = yield* keepWith({ EVENT_RETENTION_DAYS: "90", MESSAGE_RETENTION_DAYS: "30" })
        assert.includeMembers(messages.dropped, ["messages_before", "message_transitions_before"])
        assert.strictEqual(
          (yield* names("messages"))[0],
          Partitions.partitionName("messages", Partitions.addMonths(now, -1))
        )
        assert.strictEqual(
          (yield* names("message_transitions"))[0],
          Partitions.partitionName("message_transitions", Partitions.addMonths(now, -1))
        )
      }))

    it.effect("refuses an EVENT_RETENTION_DAYS below 90 (a delivery could outlive its event)", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(keepWith({ EVENT_RETENTION_DAYS: "30" }))
        assert.isTrue(Exit.isFailure(exit))
        assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), /Expected a whole number of days >= 90/)
      }))
  })
})
