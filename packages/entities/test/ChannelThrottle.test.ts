/**
 * A channel its provider throttles (`PROVIDER_RATE_LIMITED`, WhatsApp's rate-overlimit on QR):
 * the channel pauses, the throttled message waits without spending its attempts, and a run of
 * throttles past the bound fails it with `provider_throttled` (docs/LIMITS.md, "Number protection").
 * Pauses and bound are shortened (`ThrottleSettings`); the rule is the production one.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { Pacer } from "@switchboard/domain"
import {
  ChannelEntity,
  ChannelProtocol,
  ChannelThrottle,
  Cluster,
  MessageEntity,
  MessageMoves
} from "@switchboard/entities"
import { ChannelProvider, ChannelProviders, ProvidersConfig } from "@switchboard/providers"
import { Effect, Layer } from "effect"
import { EntityRepos, queueMessage, setupChannel, stubProvider, timeline, waitFor } from "./support.js"

/** Throttles this many sends to a recipient before taking one (Infinity: never takes one). */
const throttleFirst = new Map<string, number>()
/** Sends the provider was asked for, per recipient (each asked WhatsApp again). */
const asked = new Map<string, number>()

const throttling: ChannelProvider.ChannelProvider = stubProvider(
  { max_throughput_mps: 50, message_types: ["text"] },
  (message) =>
    Effect.sync(() => {
      const n = (asked.get(message.to) ?? 0) + 1
      asked.set(message.to, n)
      return n <= (throttleFirst.get(message.to) ?? 0)
        ? ChannelProvider.refused(
          true,
          ChannelProvider.PROVIDER_RATE_LIMITED,
          "WhatsApp throttled this channel's sends"
        )
        : ChannelProvider.accepted
    })
)

const testLayer = (settings: { readonly scale: number; readonly maxWaitMs: number }) =>
  Layer.mergeAll(ChannelEntity.ChannelEntityLive, MessageEntity.MessageEntityLive).pipe(
    Layer.provide(MessageMoves.MessageMoves.Default),
    Layer.provide(Layer.succeed(ChannelThrottle.ThrottleSettings, settings)),
    Layer.provide(Layer.succeed(ChannelProviders.ChannelProviders, ChannelProviders.make({ qr: throttling }))),
    Layer.provideMerge(EntityRepos),
    Layer.provideMerge(ProvidersConfig.layer({ retryDelayScale: 0.01 })),
    Layer.provideMerge(Cluster.single),
    Layer.provideMerge(TestDatabase.sqlLayer)
  )

const attemptsOf = (id: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ attempts: number }>`SELECT attempts FROM messages WHERE id = ${id}`
  )
    .pipe(Effect.map((rows) => Number(rows[0]!.attempts)), Effect.orDie)

describe("a throttled channel", () => {
  // pauses of 30 ms, 60 ms, 120 ms, ... instead of 30 s, 60 s, 2 min
  layer(testLayer({ scale: 0.001, maxWaitMs: 60_000 }), { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("lets a throttled message wait for the channel's pause without spending attempts: sent after 5 throttles", () =>
      Effect.gen(function*() {
        const target = yield* setupChannel({ provider: "qr", status: "connected" })
        const to = "+4915112349001"
        // more throttles than a message has attempts (4): spending them would fail it
        throttleFirst.set(to, 5)
        const message = yield* queueMessage(target, { to })
        yield* (yield* ChannelProtocol.ChannelEntity.client)(target.channelId).Wake()
        const sent = yield* waitFor(
          message.id,
          (m) => m.status === "provider_accepted" || m.status === "failed_permanent",
          20_000
        )
        const dbg = JSON.stringify(
          (yield* timeline(message.id)).map((s) => [s.to_state, s.at.getTime() % 100000, s.reason])
        )
        assert.strictEqual(sent.status, "provider_accepted", dbg)
        assert.strictEqual(asked.get(to), 6)
        assert.strictEqual(yield* attemptsOf(message.id), 0)
        const steps = yield* timeline(message.id)
        const waits = steps.filter((s) => s.to_state === "queued" && s.from_state === "failed_retryable")
        assert.strictEqual(waits.length, 5)
        assert.include(waits[0]!.reason, "no attempt spent")
        // each wait is the channel's pause, growing: the next try is not sooner than the one before's pause
        const tries = steps.filter((s) => s.to_state === "dispatching").map((s) => s.at.getTime())
        assert.strictEqual(tries.length, 6)
        for (let i = 1; i < tries.length; i++) assert.isAtLeast(tries[i]! - tries[i - 1]!, 30 * 2 ** (i - 1) - 5)
      }))
  })

  // pauses of 300 ms, 600 ms, 1.2 s, ...; the bound 4 s instead of an hour (the recipient's 6 a minute stays out of the way)
  layer(testLayer({ scale: 0.01, maxWaitMs: 4_000 }), { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("fails a message the channel stays throttled for past the bound, with failure.code provider_throttled", () =>
      Effect.gen(function*() {
        const target = yield* setupChannel({ provider: "qr", status: "connected" })
        const to = "+4915112349002"
        throttleFirst.set(to, Number.POSITIVE_INFINITY)
        const message = yield* queueMessage(target, { to })
        yield* (yield* ChannelProtocol.ChannelEntity.client)(target.channelId).Wake()
        const failed = yield* waitFor(message.id, (m) => m.status === "failed_permanent", 60_000)
        assert.strictEqual(failed.failure?.code, Pacer.PROVIDER_THROTTLED)
        assert.strictEqual(failed.failure?.class, "permanent")
        assert.include(failed.failure?.reason ?? "", "throttling")
        assert.strictEqual(yield* attemptsOf(message.id), 0)
        // not before the bound (4 s here) of throttling without a send taken, and never a tight loop
        const steps = yield* timeline(message.id)
        const first = steps.find((s) => s.to_state === "dispatching")!.at.getTime()
        const end = steps.find((s) => s.to_state === "failed_permanent")!.at.getTime()
        assert.isAtLeast(end - first, 4_000)
        assert.isAtMost(asked.get(to)!, 6)
      }))
  })
})
