/**
 * The Channel entity on the TestClock (`Entity.makeTestClient`): the test moves time instead of
 * sleeping, and each check is made one millisecond short of the moment and then at it.
 * - Pacing (`Pacer.ts`): one send slot per `1 / max_throughput_mps` seconds; on a linked-device
 *   (QR) channel each gap gets its random share of `QR_PACING_JITTER` (fixed at 0.5 here).
 * - Idle close: a connection its provider lets go (`dropWhenIdle`: the sandbox) is closed after
 *   `ConnectionIdleTime` (the production 10 s) with nothing to do, and the loop ends.
 * The database is real (PGlite or Postgres); the test waits for it on the live clock.
 */
import { Entity, ShardingConfig } from "@effect/cluster"
import { assert, describe, layer } from "@effect/vitest"
import { GroupCommit } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { ChannelEntity, ChannelProtocol, MessageMoves, ReceiptBatches } from "@switchboard/entities"
import { ChannelProvider, ChannelProviders, ProvidersConfig } from "@switchboard/providers"
import { Clock, Duration, Effect, Layer, Random, TestClock, TestServices } from "effect"
import { EntityRepos, queueMessage, setupChannel, stubProvider } from "./support.js"

/** When (TestClock, epoch ms) the provider was given each send, per channel. */
const sentAt = new Map<string, Array<number>>()
/** Connections closed, per channel. */
const closed = new Map<string, number>()

const recording = (dropWhenIdle: boolean): ChannelProvider.ChannelProvider => {
  const inner = stubProvider(
    { max_throughput_mps: 1, message_types: ["text"] },
    () => Effect.succeed(ChannelProvider.accepted)
  )
  return {
    connect: (channel) =>
      Effect.gen(function*() {
        yield* Effect.addFinalizer(() => Effect.sync(() => closed.set(channel.id, (closed.get(channel.id) ?? 0) + 1)))
        const { pairing, ...connection } = yield* inner.connect(channel)
        return {
          ...connection,
          // a sandbox-like connection has no pairing (no per-recipient spacing) and may be dropped
          ...(dropWhenIdle ? { dropWhenIdle: true } : pairing === undefined ? {} : { pairing }),
          send: (message) =>
            Effect.zipRight(
              Effect.map(Clock.currentTimeMillis, (now) => {
                sentAt.set(channel.id, [...(sentAt.get(channel.id) ?? []), now])
              }),
              connection.send(message)
            )
        }
      })
  }
}

const Channel = ChannelEntity.ChannelEntityLive.pipe(
  // a dispatch claim and an acceptance wait for other channels' on the clock (`DispatchWindow`,
  // `ReceiptWindow`): this test's clock moves only when it moves it, and it checks each send to
  // the millisecond of its slot
  Layer.provide(MessageMoves.MessageMoves.Default.pipe(
    Layer.provide(Layer.mergeAll(
      Layer.succeed(GroupCommit.DispatchWindow, Duration.zero),
      Layer.succeed(ReceiptBatches.ReceiptWindow, Duration.zero)
    ))
  )),
  Layer.provide(Layer.succeed(
    ChannelProviders.ChannelProviders,
    ChannelProviders.make({ sandbox: recording(true), qr: recording(false) })
  ))
)

const TestLayer = Layer.mergeAll(EntityRepos, ProvidersConfig.layer({}), ShardingConfig.layerDefaults).pipe(
  Layer.provideMerge(TestDatabase.sqlLayer)
)

/** Waits on the live clock (the database is real) until `check` holds. */
const liveEventually = <E, R>(check: Effect.Effect<boolean, E, R>, timeoutMs = 10_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (yield* check) return
      yield* TestServices.provideLive(Effect.sleep("20 millis"))
    }
    return yield* Effect.dieMessage("condition not met in time")
  })

/** Lets the entity's loop run on the live clock until it waits on the TestClock again. */
const settle = Effect.zipRight(
  TestServices.provideLive(Effect.sleep("300 millis")),
  liveEventually(Effect.map(TestClock.sleeps(), (s) => s.length > 0))
)

const sends = (channelId: string) => Effect.sync(() => sentAt.get(channelId)?.length ?? 0)

/** A channel with three messages queued, woken; the entity's random share fixed at 0.5. */
const threeQueued = (provider: "sandbox" | "qr") =>
  Effect.gen(function*() {
    yield* TestClock.setTime(Date.now())
    const target = yield* setupChannel({ provider, status: "connected" })
    for (const to of ["+4915112340001", "+4915112340002", "+4915112340003"]) yield* queueMessage(target, { to })
    const clients = yield* Entity.makeTestClient(ChannelProtocol.ChannelEntity, Channel)
    const channel = yield* Effect.withRandom(clients(target.channelId), Random.fixed([0.5]))
    const start = yield* Clock.currentTimeMillis
    yield* channel.Wake()
    yield* liveEventually(Effect.map(sends(target.channelId), (n) => n === 1))
    return { channelId: target.channelId, start }
  })

/** The next send goes `gapMs` after the previous one: not at `gapMs - 1`, at `gapMs`. */
const nextSendAfter = (channelId: string, gapMs: number, expected: number) =>
  Effect.gen(function*() {
    yield* settle
    yield* TestClock.adjust(gapMs - 1)
    yield* settle
    assert.strictEqual(yield* sends(channelId), expected - 1, `no send ${gapMs - 1} ms after the previous one`)
    yield* TestClock.adjust(1)
    yield* liveEventually(Effect.map(sends(channelId), (n) => n === expected))
  })

describe("the Channel entity on the TestClock", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.scoped("paces a 1 message/s channel's sends one second apart, to the millisecond", () =>
      Effect.gen(function*() {
        const { channelId, start } = yield* threeQueued("sandbox")
        yield* nextSendAfter(channelId, 1_000, 2)
        yield* nextSendAfter(channelId, 1_000, 3)
        assert.deepStrictEqual(sentAt.get(channelId), [start, start + 1_000, start + 2_000])
      }))

    it.scoped("spaces a linked-device (QR) channel's sends by the interval plus the jitter's share: 1.25 s at 0.5", () =>
      Effect.gen(function*() {
        const { channelId, start } = yield* threeQueued("qr")
        yield* nextSendAfter(channelId, 1_250, 2)
        yield* nextSendAfter(channelId, 1_250, 3)
        assert.deepStrictEqual(sentAt.get(channelId), [start, start + 1_250, start + 2_500])
      }))

    it.scoped("closes an idle sandbox connection after 10 s with nothing to do, not a millisecond sooner", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.now())
        const target = yield* setupChannel()
        const clients = yield* Entity.makeTestClient(ChannelProtocol.ChannelEntity, Channel)
        const channel = yield* clients(target.channelId)
        assert.isTrue((yield* channel.Status()).connected, "activation connects")
        yield* settle
        yield* TestClock.adjust(9_999)
        yield* settle
        assert.isTrue((yield* channel.Status()).connected, "still open 1 ms before the idle time")
        assert.isUndefined(closed.get(target.channelId))
        yield* TestClock.adjust(1)
        yield* liveEventually(Effect.map(channel.Status(), (s) => !s.connected))
        assert.strictEqual(closed.get(target.channelId), 1)
      }))
  })
})
