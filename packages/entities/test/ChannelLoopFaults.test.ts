/**
 * The Channel entity's dispatch loop comes back after its own statements fail: a passing database
 * failure (`DatabaseUnavailable`) and a defect, injected into the loop's read of the queue. Every
 * queued message still reaches the provider exactly once and is recorded
 * `provider_accepted`, and a wake-up after the faults finds a running loop (before, a defect left
 * the loop dead and its `looping` flag set: the channel never dispatched again).
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { DatabaseUnavailable, DispatchQueueRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { ChannelEntity, ChannelProtocol, Cluster, MessageEntity, MessageMoves } from "@switchboard/entities"
import { ChannelProvider, ChannelProviders, ProvidersConfig, QrConnectionConfig } from "@switchboard/providers"
import { Effect, Layer, Stream } from "effect"
import { EntityRepos, queueMessage, setupChannel, waitFor } from "./support.js"

type Fault = "unavailable" | "defect"

/** The faults the next reads of the queue meet, in order. */
const faults = { reads: [] as Array<Fault>, seen: 0 }

const unavailable = () => new DatabaseUnavailable.DatabaseUnavailable({ reason: "unreachable", code: "57P01" })

const inject = (fault: Fault) => {
  faults.seen++
  return fault === "unavailable" ? Effect.fail(unavailable()) : Effect.die(new Error("injected defect"))
}

const FaultyQueue = Layer.effect(
  DispatchQueueRepo.DispatchQueueRepo,
  Effect.map(DispatchQueueRepo.DispatchQueueRepo, (real) =>
    DispatchQueueRepo.DispatchQueueRepo.make({
      ...real,
      nextQueued: (...args) =>
        Effect.suspend(() => {
          const fault = faults.reads.shift()
          return fault === undefined ? real.nextQueued(...args) : inject(fault)
        })
    }))
).pipe(Layer.provide(DispatchQueueRepo.DispatchQueueRepo.Default))

/** Message ids in the order the provider took them. */
const sends: Array<string> = []

const recording: ChannelProvider.ChannelProvider = {
  connect: () =>
    Effect.succeed(
      {
        capabilities: { max_throughput_mps: 50, message_types: ["text"] },
        send: (message) => Effect.sync(() => sends.push(message.id)).pipe(Effect.as(ChannelProvider.accepted)),
        events: Stream.never,
        pendingReceipts: Effect.succeed(0)
      } satisfies ChannelProvider.ChannelConnection
    )
}

// no sweeper: nothing but the entity's own loop dispatches (a stuck message stays stuck)
const TestLayer = Layer.mergeAll(ChannelEntity.ChannelEntityLive, MessageEntity.MessageEntityLive).pipe(
  Layer.provide(MessageMoves.MessageMoves.Default),
  Layer.provide(Layer.succeed(ChannelProviders.ChannelProviders, ChannelProviders.make({ sandbox: recording }))),
  Layer.provide(FaultyQueue),
  Layer.provideMerge(EntityRepos),
  Layer.provideMerge(ProvidersConfig.layer({ retryDelayScale: 0.01 })),
  Layer.provideMerge(QrConnectionConfig.layer({})),
  Layer.provideMerge(Cluster.single),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

describe("Channel dispatch loop under statement failures", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("dispatches every queued message once, and a later wake-up finds a running loop", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const target = yield* setupChannel()
        const client = (yield* ChannelProtocol.ChannelEntity.client)(target.channelId)
        // the entity's first activation reads the queue at once: let it find it empty
        yield* client.Wake()

        const first: Array<string> = []
        for (let i = 0; i < 6; i++) first.push((yield* queueMessage(target, { to: `+491511234100${i}` })).id)
        faults.reads.push("unavailable", "defect", "unavailable", "defect")
        yield* client.Wake()
        for (const id of first) yield* waitFor(id, (m) => m.status === "provider_accepted", 30_000)
        assert.strictEqual(faults.seen, 4, "every fault was met")
        assert.strictEqual(faults.reads.length, 0)

        // the loop that came back keeps coming back
        const second: Array<string> = []
        for (let i = 0; i < 3; i++) second.push((yield* queueMessage(target, { to: `+491511234200${i}` })).id)
        faults.reads.push("defect")
        yield* client.Wake()
        for (const id of second) yield* waitFor(id, (m) => m.status === "provider_accepted", 30_000)
        assert.strictEqual(faults.seen, 5)

        const all = [...first, ...second]
        assert.deepStrictEqual([...sends].sort(), [...all].sort(), "each message reached the provider once")
        const dispatched = yield* sql<{ message_id: string; n: number }>`SELECT message_id, count(*)::int AS n
          FROM message_transitions WHERE message_id IN ${sql.in(all)} AND to_state = 'dispatching'
          GROUP BY message_id`
        assert.strictEqual(dispatched.length, all.length)
        for (const row of dispatched) assert.strictEqual(row.n, 1, `${row.message_id} dispatched once`)
      }))
  })
})
