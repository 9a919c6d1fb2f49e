/**
 * The Channel entity's dispatch order when a more urgent message arrives while a batch is being
 * sent: the move to `dispatching` is refused while a more urgent message is due, so the urgent one
 * takes the next send slot even when its wake-up came too late (here: never came).
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { ChannelEntity, ChannelProtocol, Cluster, MessageEntity, MessageMoves } from "@switchboard/entities"
import { ChannelProvider, ChannelProviders, ProvidersConfig, QrConnectionConfig } from "@switchboard/providers"
import { Effect, Layer, Stream } from "effect"
import { EntityRepos, queueMessage, setupChannel, waitFor } from "./support.js"

/** Message ids in the order the provider took them. */
const sends: Array<string> = []

const recording: ChannelProvider.ChannelProvider = {
  connect: () =>
    Effect.succeed(
      {
        capabilities: { max_throughput_mps: 2, message_types: ["text"] },
        send: (message) => Effect.sync(() => sends.push(message.id)).pipe(Effect.as(ChannelProvider.accepted)),
        events: Stream.never,
        pendingReceipts: Effect.succeed(0)
      } satisfies ChannelProvider.ChannelConnection
    )
}

// no sweeper: nothing repeats a wake-up
const TestLayer = Layer.mergeAll(ChannelEntity.ChannelEntityLive, MessageEntity.MessageEntityLive).pipe(
  Layer.provide(MessageMoves.MessageMoves.Default),
  Layer.provide(Layer.succeed(ChannelProviders.ChannelProviders, ChannelProviders.make({ sandbox: recording }))),
  Layer.provideMerge(EntityRepos),
  Layer.provideMerge(ProvidersConfig.layer({ retryDelayScale: 0.01 })),
  Layer.provideMerge(QrConnectionConfig.layer({})),
  Layer.provideMerge(Cluster.single),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

describe("Channel dispatch order", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("dispatches an authentication message queued during a marketing batch before the rest of the batch", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const target = yield* setupChannel()
        const marketing: Array<string> = []
        for (let i = 0; i < 5; i++) {
          marketing.push((yield* queueMessage(target, { category: "marketing", to: `+491511234000${i}` })).id)
        }
        yield* (yield* ChannelProtocol.ChannelEntity.client)(target.channelId).Wake()
        // the batch was read and is being sent (one per 500 ms)
        yield* waitFor(marketing[0]!, (m) => m.status !== "queued", 10_000)
        // committed after the batch was read, and its wake-up never comes
        const urgent = yield* queueMessage(target, { category: "authentication", to: "+4915112349999" })
        const gone = yield* sql<{ id: string }>`SELECT id FROM messages
          WHERE id IN ${sql.in(marketing)} AND status <> 'queued'`

        for (const id of [urgent.id, ...marketing]) {
          yield* waitFor(id, (m) => m.status === "provider_accepted", 10_000)
        }
        const dispatched = yield* sql<{ message_id: string; at: Date }>`SELECT message_id, at
          FROM message_transitions WHERE message_id IN ${sql.in([urgent.id, ...marketing])}
          AND to_state = 'dispatching' ORDER BY at, id`
        const order = dispatched.map((d) => d.message_id)
        assert.strictEqual(order.length, 6, "each dispatched once")
        assert.strictEqual(order.indexOf(urgent.id), gone.length, "the next send slot after it was queued")
        const mine = sends.filter((id) => id === urgent.id || marketing.includes(id))
        assert.deepStrictEqual(mine, order, "the provider took them in that order")
        // and the pace held: the urgent message took a send slot like any other, the very next one
        // (a refused dispatch gives its slot back). A lost slot would put a whole slot (500 ms) on
        // top of a gap; compared with the batch's other gaps, not with a wall-clock figure, so a
        // loaded machine that stretches every gap does not fail it (docs/TESTING.md "Timing bounds")
        const times = dispatched.map((d) => d.at.getTime())
        const urgentAt = order.indexOf(urgent.id)
        const gaps = times.slice(1).map((t, i) => t - times[i]!)
        const urgentGap = gaps[urgentAt - 1]!
        const others = gaps.filter((_, i) => i !== urgentAt - 1)
        assert.isBelow(urgentGap, Math.max(...others) + 500, `no slot was lost to the refused dispatch: ${gaps}`)
        for (let i = 0; i + 1 < times.length; i++) {
          assert.isAtLeast(times[i + 1]! - times[i]!, 500, `dispatch ${i + 1} came too soon`)
        }
      }))
  })
})
