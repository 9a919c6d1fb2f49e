/**
 * The Channel entity's keep-alive across runners: `Entity.keepAlive(true)` leaves a persisted
 * request that the cluster answers only once the entity releases it. When the runner holding it
 * stops, the request is delivered again to the channel's next instance, on the runner that takes
 * the shard over; that instance must release it once it has nothing to keep alive for, or the
 * channel is never passivated.
 *
 * The runners here are two cluster stacks built one after the other on the same database (the
 * cluster's messages are stored there in both modes); the second takes over every shard.
 */
import { Sharding, SingleRunner } from "@effect/cluster"
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { ChannelEntity, ChannelProtocol, ClusterSettings, MessageMoves } from "@switchboard/entities"
import { ChannelProvider, ChannelProviders, ProvidersConfig, QrConnectionConfig } from "@switchboard/providers"
import { Effect, Layer, Stream } from "effect"
import { EntityRepos, setupChannel } from "./support.js"

/** Receipts the provider says are under way: what keeps a sandbox channel alive without a queue. */
let pendingReceipts = 0

const provider: ChannelProvider.ChannelProvider = {
  connect: () =>
    Effect.succeed(
      {
        capabilities: { max_throughput_mps: 2, message_types: ["text"] },
        send: () => Effect.succeed(ChannelProvider.accepted),
        events: Stream.never,
        pendingReceipts: Effect.sync(() => pendingReceipts)
      } satisfies ChannelProvider.ChannelConnection
    )
}

/** One runner: the Channel entity on a single-node cluster, idle entities passivated after 1 s. */
const Runner = ChannelEntity.ChannelEntityLive.pipe(
  Layer.provide(MessageMoves.MessageMoves.Default),
  Layer.provide(Layer.succeed(ChannelProviders.ChannelProviders, ChannelProviders.make({ sandbox: provider }))),
  Layer.provideMerge(
    SingleRunner.layer({
      runnerStorage: "memory",
      shardingConfig: { ...ClusterSettings.shardingSettings, entityMaxIdleTime: "1 second" }
    })
  )
)

const TestLayer = EntityRepos.pipe(
  Layer.provideMerge(ProvidersConfig.layer({})),
  Layer.provideMerge(QrConnectionConfig.layer({})),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

/** Live entities on the current runner (it hosts only Channel entities). */
const liveChannels = Effect.flatMap(Sharding.Sharding, (sharding) => sharding.activeEntityCount)

/** Polls `check` every 200 ms until it holds; false when it never did within `timeoutMs`. */
const eventually = <E, R>(check: Effect.Effect<boolean, E, R>, timeoutMs: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (yield* check) return true
      yield* Effect.sleep("200 millis")
    }
    return false
  })

describe("Channel keep-alive across runners", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("passivates a channel whose keep-alive came over from a runner that stopped, once it is idle", () =>
      Effect.gen(function*() {
        const target = yield* setupChannel()

        // runner A: the channel has receipts under way and keeps itself alive
        pendingReceipts = 1
        yield* Effect.scoped(
          Effect.gen(function*() {
            const channel = (yield* ChannelProtocol.ChannelEntity.client)(target.channelId)
            const kept = yield* eventually(Effect.map(channel.Status(), (s) => s.keep_alive), 10_000)
            assert.isTrue(kept, "kept alive on the first runner")
          }).pipe(Effect.provide(Layer.fresh(Runner)))
        )

        // A stopped with its keep-alive unanswered; the work it was kept alive for is over
        pendingReceipts = 0

        // runner B: the stored keep-alive brings the channel up; nothing else ever asks for it
        yield* Effect.scoped(
          Effect.gen(function*() {
            const activated = yield* eventually(Effect.map(liveChannels, (n) => n === 1), 15_000)
            assert.isTrue(activated, "the stored keep-alive brought the channel up on the second runner")
            // idle for 1 s; the cluster's reaper looks every 5 s
            const passivated = yield* eventually(Effect.map(liveChannels, (n) => n === 0), 20_000)
            assert.isTrue(passivated, "passivated once idle")
          }).pipe(Effect.provide(Layer.fresh(Runner)))
        )
      }))
  })
})
