/**
 * The Channel entity's dispatch for linked-device (QR) channels, with a recording provider in
 * place of WhatsApp (the Baileys path is covered end to end in test/qr.test.ts): per-recipient
 * spacing delays a recipient at its cap without holding up the others or failing anything.
 */
import { assert, describe, layer } from "@effect/vitest"
import { MessagesRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { QrSafetyWindow } from "@switchboard/domain"
import { ChannelEntity, ChannelProtocol, Cluster, MessageEntity, MessageMoves } from "@switchboard/entities"
import { ChannelProvider, ChannelProviders, ProvidersConfig } from "@switchboard/providers"
import { Effect, Layer } from "effect"
import { EntityRepos, queueMessage, setupChannel, stubProvider, waitFor } from "./support.js"

/** Every send the provider took: recipient and message id, in order. */
const sends: Array<{ readonly to: string; readonly id: string }> = []

const recording: ChannelProvider.ChannelProvider = stubProvider(
  // fast, so only the spacing can hold a message back
  { max_throughput_mps: 50, message_types: ["text"] },
  (message) =>
    Effect.sync(() => sends.push({ to: message.to, id: message.id })).pipe(Effect.as(ChannelProvider.accepted))
)

const TestLayer = Layer.mergeAll(ChannelEntity.ChannelEntityLive, MessageEntity.MessageEntityLive).pipe(
  Layer.provide(MessageMoves.MessageMoves.Default),
  Layer.provide(Layer.succeed(ChannelProviders.ChannelProviders, ChannelProviders.make({ qr: recording }))),
  Layer.provideMerge(EntityRepos),
  Layer.provideMerge(ProvidersConfig.layer({ retryDelayScale: 0.01 })),
  Layer.provideMerge(Cluster.single),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

describe("QR channel dispatch", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("holds a recipient at 6 a minute while the others go, failing nothing", () =>
      Effect.gen(function*() {
        const target = yield* setupChannel({ provider: "qr", status: "connected" })
        const busy = "+4915112340010"
        const other = "+4915112340011"
        const toBusy = []
        for (let i = 0; i < QrSafetyWindow.QR_PER_RECIPIENT_CAP + 2; i++) {
          toBusy.push(yield* queueMessage(target, { to: busy }))
        }
        // queued after the whole burst: it must not wait behind the held ones
        const toOther = yield* queueMessage(target, { to: other })
        yield* (yield* ChannelProtocol.ChannelEntity.client)(target.channelId).Wake()

        const otherSent = yield* waitFor(toOther.id, (m) => m.status === "provider_accepted", 10_000)
        assert.strictEqual(otherSent.status, "provider_accepted")
        for (const m of toBusy.slice(0, QrSafetyWindow.QR_PER_RECIPIENT_CAP)) {
          yield* waitFor(m.id, (x) => x.status === "provider_accepted", 10_000)
        }
        // well past the pace of 50 a second: the 7th and 8th wait for the minute, still queued
        yield* Effect.sleep("2 seconds")
        const messages = yield* MessagesRepo.MessagesRepo
        for (const m of toBusy.slice(QrSafetyWindow.QR_PER_RECIPIENT_CAP)) {
          const row = yield* messages.findById(m.id)
          assert.strictEqual(row._tag === "Some" ? row.value.status : "missing", "queued")
        }
        const mine = sends.filter((s) => s.to === busy || s.to === other)
        assert.strictEqual(mine.filter((s) => s.to === busy).length, QrSafetyWindow.QR_PER_RECIPIENT_CAP)
        assert.strictEqual(mine.filter((s) => s.to === other).length, 1)
      }))
  })
})
