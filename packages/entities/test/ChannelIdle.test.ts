/**
 * Idle Channel entities: a sandbox channel with nothing to do closes its connection after
 * `ConnectionIdleTime` (1 s here) and its dispatch loop ends; a wake-up connects again and
 * dispatches, `SimulateInbound` still works, and a linked-device (QR) channel keeps its link.
 * The real sandbox network, wrapped to count the connections it opens and closes.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { ChannelEntity, ChannelProtocol, Cluster, MessageEntity, MessageMoves } from "@switchboard/entities"
import { ChannelProvider, ChannelProviders, ProvidersConfig, SandboxProvider } from "@switchboard/providers"
import { Duration, Effect, Layer } from "effect"
import { EntityRepos, queueMessage, setupChannel, stubProvider, waitFor } from "./support.js"

/** Connections opened and closed, per channel. */
const opened = new Map<string, number>()
const closed = new Map<string, number>()
const bump = (counts: Map<string, number>, id: string) => counts.set(id, (counts.get(id) ?? 0) + 1)

const counting = (inner: ChannelProvider.ChannelProvider): ChannelProvider.ChannelProvider => ({
  connect: (channel) =>
    Effect.gen(function*() {
      bump(opened, channel.id)
      yield* Effect.addFinalizer(() => Effect.sync(() => bump(closed, channel.id)))
      return yield* inner.connect(channel)
    })
})

/** A linked device that never sends anything: what an idle paired QR channel looks like to its entity. */
const qr: ChannelProvider.ChannelProvider = stubProvider(
  { max_throughput_mps: 1, message_types: ["text"] },
  () => Effect.succeed(ChannelProvider.accepted)
)

const Providers = Layer.effect(
  ChannelProviders.ChannelProviders,
  Effect.map(
    SandboxProvider.SandboxProvider,
    (sandbox) => ChannelProviders.make({ sandbox: counting(sandbox), qr: counting(qr) })
  )
).pipe(Layer.provide(SandboxProvider.SandboxProvider.Default))

const TestLayer = Layer.mergeAll(ChannelEntity.ChannelEntityLive, MessageEntity.MessageEntityLive).pipe(
  Layer.provide(MessageMoves.MessageMoves.Default),
  Layer.provide(Providers),
  Layer.provide(Layer.succeed(ChannelEntity.ConnectionIdleTime, Duration.seconds(1))),
  Layer.provideMerge(EntityRepos),
  Layer.provideMerge(ProvidersConfig.layer({ retryDelayScale: 0.01, sandboxReceiptDelaysMs: [100, 200, 300] })),
  Layer.provideMerge(Cluster.single),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

/** Polls `check` every 100 ms until it holds; false when it never did within `timeoutMs`. */
const eventually = <E, R>(check: Effect.Effect<boolean, E, R>, timeoutMs: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (yield* check) return true
      yield* Effect.sleep("100 millis")
    }
    return false
  })

describe("Idle Channel entities", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("closes an idle sandbox channel's connection and ends its loop; a wake-up connects and dispatches", () =>
      Effect.gen(function*() {
        const target = yield* setupChannel()
        const channel = (yield* ChannelProtocol.ChannelEntity.client)(target.channelId)
        assert.isTrue((yield* channel.Status()).connected, "activation connects")
        const dropped = yield* eventually(Effect.map(channel.Status(), (s) => !s.connected), 5_000)
        assert.isTrue(dropped, "the idle connection was closed")
        assert.strictEqual(closed.get(target.channelId), 1)

        // no loop looks at the queue any more: a message nobody wakes the channel for stays queued
        const message = yield* queueMessage(target)
        yield* Effect.sleep("2500 millis")
        assert.strictEqual((yield* waitFor(message.id, () => true)).status, "queued")

        yield* channel.Wake({ message_id: message.id })
        const read = yield* waitFor(message.id, (m) => m.status === "read", 10_000)
        assert.isNotNull(read.read_at, "dispatched, and the connection stayed for every receipt")
        assert.strictEqual(opened.get(target.channelId), 2, "connected again for the work")
        const droppedAgain = yield* eventually(Effect.map(channel.Status(), (s) => !s.connected), 5_000)
        assert.isTrue(droppedAgain, "closed again once idle")
        assert.isFalse((yield* channel.Status()).keep_alive)
        assert.strictEqual(closed.get(target.channelId), 2)
      }))

    it.effect("simulates an inbound message on a channel whose idle connection was closed, then closes it again", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const target = yield* setupChannel()
        const channel = (yield* ChannelProtocol.ChannelEntity.client)(target.channelId)
        yield* channel.Status()
        assert.isTrue(yield* eventually(Effect.map(channel.Status(), (s) => !s.connected), 5_000))

        assert.isTrue(
          yield* channel.SimulateInbound({
            from: "+4915112345678",
            body: { _tag: "text", body: "anyone there?" },
            quoted_provider_message_id: null
          })
        )
        const recorded = yield* eventually(
          Effect.map(
            sql`SELECT 1 FROM messages WHERE channel_id = ${target.channelId} AND direction = 'inbound'`,
            (rows) => rows.length === 1
          ),
          5_000
        )
        assert.isTrue(recorded, "the inbound message was recorded")
        const droppedAgain = yield* eventually(Effect.map(channel.Status(), (s) => !s.connected), 5_000)
        assert.isTrue(droppedAgain, "the connection it opened was closed once idle")
        assert.strictEqual(opened.get(target.channelId), 2)
      }))

    it.effect("keeps an idle linked-device (QR) channel's link", () =>
      Effect.gen(function*() {
        const target = yield* setupChannel({ provider: "qr", status: "connected" })
        const channel = (yield* ChannelProtocol.ChannelEntity.client)(target.channelId)
        assert.isTrue((yield* channel.Status()).connected)
        yield* Effect.sleep("3 seconds")
        const status = yield* channel.Status()
        assert.isTrue(status.connected, "still linked after three idle periods")
        assert.isTrue(status.keep_alive, "and kept alive while the link is held")
        assert.strictEqual(opened.get(target.channelId), 1)
        assert.isUndefined(closed.get(target.channelId))
      }))
  })
})
