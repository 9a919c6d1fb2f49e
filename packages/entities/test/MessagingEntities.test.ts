import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ChannelsRepo, ContactsRepo, ConversationsRepo, MessagesRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Schemas } from "@switchboard/domain"
import { ChannelProtocol, Cluster, InboundMessages, MessageProtocol, MessagingEntities } from "@switchboard/entities"
import { ProvidersConfig, QrConnectionConfig } from "@switchboard/providers"
import { Clock, Effect, Layer, Option } from "effect"
import { eventTypes, queueMessage, setupChannel, timeline, waitFor } from "./support.js"

const TestLayer = Layer.mergeAll(
  MessagingEntities.MessagingEntitiesLive,
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  ChannelsRepo.ChannelsRepo.Default,
  InboundMessages.InboundMessages.Default
).pipe(
  Layer.provideMerge(ProvidersConfig.layer({ retryDelayScale: 0.01, sandboxReceiptDelaysMs: [100, 200, 300] })),
  Layer.provideMerge(QrConnectionConfig.layer({})),
  Layer.provideMerge(Cluster.single),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

const FULL_PATH = [
  [null, "queued"],
  ["queued", "dispatching"],
  ["dispatching", "provider_accepted"],
  ["provider_accepted", "sent"],
  ["sent", "delivered"],
  ["delivered", "read"]
]

describe("Channel and Message entities", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("dispatches a queued message whose wake-up was lost (the sweeper repeats it)", () =>
      Effect.gen(function*() {
        const target = yield* setupChannel()
        // written like a send, but nobody wakes the channel
        const message = yield* queueMessage(target)
        const read = yield* waitFor(message.id, (m) => m.status === "read")
        assert.isNotNull(read.read_at)
        assert.deepStrictEqual((yield* timeline(message.id)).map((t) => [t.from_state, t.to_state]), FULL_PATH)
        assert.deepStrictEqual((yield* eventTypes(message.id)).map((e) => e.type), [
          "message.queued",
          "message.sent",
          "message.delivered",
          "message.read"
        ])
      }))

    it.effect("never moves a message back when receipts arrive out of order", () =>
      Effect.gen(function*() {
        const target = yield* setupChannel()
        const message = yield* queueMessage(target, { status: "provider_accepted" })
        const client = (yield* MessageProtocol.MessageEntity.client)(message.id)
        assert.isTrue(yield* client.Transition({ to: "read" }))
        assert.isFalse(yield* client.Transition({ to: "delivered" }))
        assert.isFalse(yield* client.Transition({ to: "sent" }))
        assert.isFalse(yield* client.Transition({ to: "read" }))
        const final = yield* waitFor(message.id, () => true)
        assert.strictEqual(final.status, "read")
        assert.deepStrictEqual((yield* timeline(message.id)).map((t) => t.to_state), ["provider_accepted", "read"])
        const events = yield* eventTypes(message.id)
        assert.deepStrictEqual(events, [{
          type: "message.read",
          data: {
            object: "message",
            object_id: message.id,
            message_id: message.id,
            from_state: "provider_accepted",
            to_state: "read",
            category: "utility"
          }
        }])
      }))

    it.effect("paces a channel at 2 messages per second and keeps itself alive while it works", () =>
      Effect.gen(function*() {
        const target = yield* setupChannel()
        const ids: Array<string> = []
        for (let i = 0; i < 7; i++) ids.push((yield* queueMessage(target)).id)
        const channel = (yield* ChannelProtocol.ChannelEntity.client)(target.channelId)
        yield* channel.Wake()
        yield* waitFor(ids[2]!, (m) => m.status !== "queued")
        assert.isTrue((yield* channel.Status()).keep_alive, "alive while its queue is not empty")
        for (const id of ids) yield* waitFor(id, (m) => m.status === "read")
        const sql = yield* SqlClient.SqlClient
        // the dispatch times the channel recorded (each the send slot it took)
        const started = (yield* sql<{ at: Date }>`SELECT at FROM message_transitions
          WHERE message_id IN ${sql.in(ids)} AND to_state = 'dispatching' ORDER BY at`).map((r) => r.at.getTime())
        assert.strictEqual(started.length, ids.length)
        for (let i = 0; i + 1 < started.length; i++) {
          assert.isAtLeast(started[i + 1]! - started[i]!, 500, `dispatch ${i + 1} came too soon`)
        }
        // the channel keeps dispatching while its queue is not empty: a channel that waited for its
        // 10 s idle poll between sends would manage 0.1/s. The pace itself (2/s) is the spacing
        // above; this bound leaves a loaded machine 5 times the time (docs/TESTING.md "Timing bounds")
        const rate = (started.length - 1) / ((started[started.length - 1]! - started[0]!) / 1000)
        assert.isAtLeast(rate, 0.4, `kept dispatching (${rate.toFixed(2)}/s)`)
        // the network, which refuses anything beyond 2 msg/s, never had to refuse
        const accepted = yield* sql`SELECT 1 FROM sandbox_deliveries WHERE message_id IN ${sql.in(ids)}
          AND offers = 1 AND accepted_at IS NOT NULL`
        assert.strictEqual(accepted.length, ids.length)
        const retried = yield* sql`SELECT 1 FROM message_transitions WHERE message_id IN ${sql.in(ids)}
          AND to_state = 'failed_retryable'`
        assert.strictEqual(retried.length, 0)
        let idle = false
        for (let i = 0; i < 100 && !idle; i++) {
          yield* Effect.sleep("100 millis")
          idle = !(yield* channel.Status()).keep_alive
        }
        assert.isTrue(idle, "idle again once everything was reported")
      }))

    it.effect("repairs a message its dispatcher abandoned, without delivering it twice", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const target = yield* setupChannel()
        // what a runner killed mid-dispatch leaves: the network took and delivered the message,
        // but the message never heard back and is still `dispatching`
        const message = yield* queueMessage(target, { status: "dispatching" })
        const longAgo = Schemas.toTimestamp((yield* Clock.currentTimeMillis) - 120_000)
        const deliveredAt = Schemas.toTimestamp((yield* Clock.currentTimeMillis) - 119_000)
        yield* sql`UPDATE messages SET updated_at = ${longAgo} WHERE id = ${message.id}`
        yield* sql`INSERT INTO sandbox_deliveries (message_id, channel_id, to_number, offers, accepted_at, sent_at,
          delivered_at, read_at) VALUES (${message.id}, ${target.channelId}, ${message.to}, 1, ${longAgo}, ${longAgo},
          ${deliveredAt}, ${deliveredAt})`
        const read = yield* waitFor(message.id, (m) => m.status === "read")
        // repaired by a second dispatch or by the receipts the network already reported
        const states = (yield* timeline(message.id)).map((t) => t.to_state)
        assert.strictEqual(states[0], "dispatching")
        assert.deepStrictEqual(states.slice(-3), ["sent", "delivered", "read"])
        assert.strictEqual(states.filter((s) => s === "delivered").length, 1)
        const network = yield* sql<{ offers: number; delivered_at: Date }>`SELECT offers, delivered_at
          FROM sandbox_deliveries WHERE message_id = ${message.id}`
        assert.isAtMost(network[0]!.offers, 2, "offered once more at most")
        assert.strictEqual(network[0]!.delivered_at.toISOString(), deliveredAt, "but delivered only the first time")
        assert.strictEqual(read.delivered_at, deliveredAt, "the receipt carries the one delivery")
        const delivered = (yield* eventTypes(message.id)).filter((e) => e.type === "message.delivered")
        assert.strictEqual(delivered.length, 1)
      }))

    it.effect("wakes a channel whose messages stopped at sent or delivered when their runner died", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const target = yield* setupChannel()
        // what a runner killed between receipts leaves: the network reported `sent` (and for one
        // message `delivered`), the messages recorded it, and the timers of the later receipts died
        // with the runner; nothing has activated the channel since
        const now = yield* Clock.currentTimeMillis
        const longAgo = Schemas.toTimestamp(now - 60_000)
        const stopped = [
          yield* queueMessage(target, { status: "sent" }),
          yield* queueMessage(target, { status: "delivered", to: "+4915100000002" })
        ]
        for (const message of stopped) {
          const delivered = message.status === "delivered" ? longAgo : null
          yield* sql`UPDATE messages SET updated_at = ${longAgo}, sent_at = ${longAgo} WHERE id = ${message.id}`
          yield* sql`INSERT INTO sandbox_deliveries (message_id, channel_id, to_number, offers, accepted_at, sent_at,
            delivered_at) VALUES (${message.id}, ${target.channelId}, ${message.to}, 1, ${longAgo}, ${longAgo},
            ${delivered})`
        }
        for (const message of stopped) {
          const read = yield* waitFor(message.id, (m) => m.status === "read")
          assert.isNotNull(read.read_at)
          const states = (yield* timeline(message.id)).map((t) => t.to_state)
          assert.deepStrictEqual(states.slice(-2), ["delivered", "read"])
          assert.strictEqual(states.filter((s) => s === "delivered").length, 1)
        }
        const network = yield* sql<{ offers: number }>`SELECT offers FROM sandbox_deliveries
          WHERE message_id IN ${sql.in(stopped.map((m) => m.id))}`
        assert.deepStrictEqual(network.map((r) => r.offers), [1, 1], "nothing was offered to the network again")
      }))

    it.effect("cancels the undispatched messages of an archived channel, even when nobody asked", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const target = yield* setupChannel()
        const ids = yield* sql.withTransaction(Effect.gen(function*() {
          const queued = [yield* queueMessage(target), yield* queueMessage(target, { category: "authentication" })]
          // archived in the same instant: the archive's own cancellations never ran
          yield* sql`UPDATE channels SET status = 'archived', archived_at = now() WHERE id = ${target.channelId}`
          return queued.map((m) => m.id)
        }))
        for (const id of ids) {
          yield* waitFor(id, (m) => m.status === "cancelled")
          assert.deepStrictEqual((yield* timeline(id)).map((t) => t.to_state), ["queued", "cancelled"])
        }
        const offered = yield* sql`SELECT 1 FROM sandbox_deliveries WHERE message_id IN ${sql.in(ids)}`
        assert.strictEqual(offered.length, 0, "nothing reached the network")
      }))

    it.effect("expires a message left queued for 24 hours", () =>
      Effect.gen(function*() {
        // a QR channel still pairing: nothing dispatches its queue
        const target = yield* setupChannel({ provider: "qr", status: "pending" })
        const old = yield* queueMessage(target, { createdAt: (yield* Clock.currentTimeMillis) - 25 * 3600_000 })
        const fresh = yield* queueMessage(target, { to: "+4915100000001" })
        yield* waitFor(old.id, (m) => m.status === "expired")
        assert.strictEqual((yield* waitFor(fresh.id, () => true)).status, "queued")
        const reason = (yield* timeline(old.id)).find((t) => t.to_state === "expired")?.reason
        assert.strictEqual(reason, "not dispatched within 24 h")
      }))

    it.effect("stores the capability snapshot its provider reports when it connects", () =>
      Effect.gen(function*() {
        const channels = yield* ChannelsRepo.ChannelsRepo
        const target = yield* setupChannel({ capabilities: false })
        assert.isTrue(Option.isNone(Option.getOrThrow(yield* channels.findById(target.channelId)).capabilities))
        assert.isTrue((yield* (yield* ChannelProtocol.ChannelEntity.client)(target.channelId).Status()).connected)
        const caps = Option.getOrThrow(yield* channels.findById(target.channelId)).capabilities
        assert.isTrue(Option.isSome(caps))
        assert.strictEqual(Option.getOrThrow(caps).max_throughput_mps, 2)
        // the sandbox simulates every kind a send can carry
        assert.deepStrictEqual(Option.getOrThrow(caps).message_types, [
          "text",
          "image",
          "document",
          "audio",
          "video",
          "sticker",
          "location",
          "reaction"
        ])
      }))

    it.effect("records an inbound message through the channel, once per provider message", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const inboundMessages = yield* InboundMessages.InboundMessages
        const target = yield* setupChannel()
        const channel = (yield* ChannelProtocol.ChannelEntity.client)(target.channelId)
        assert.isTrue(
          yield* channel.SimulateInbound({
            from: "+4915112345678",
            body: { _tag: "text", body: "hi there" },
            quoted_provider_message_id: null
          })
        )
        const rows = yield* Effect.gen(function*() {
          for (let i = 0; i < 50; i++) {
            const found = yield* sql<{ id: string; provider_message_id: string }>`SELECT id, provider_message_id
              FROM messages WHERE channel_id = ${target.channelId} AND direction = 'inbound'`
            if (found.length > 0) return found
            yield* Effect.sleep("100 millis")
          }
          return []
        })
        assert.strictEqual(rows.length, 1)
        const inbound = yield* waitFor(rows[0]!.id, () => true)
        assert.strictEqual(inbound.status, "delivered")
        assert.strictEqual(inbound.from, "+4915112345678")
        assert.strictEqual(inbound.to, "+15550100001")
        const received = (yield* eventTypes(inbound.id)).filter((e) => e.type === "message.received")
        assert.strictEqual(received.length, 1)
        assert.strictEqual(received[0]!.data.conversation_id, inbound.conversation_id)
        // the provider reporting the same message again records nothing new
        const again = yield* inboundMessages.record({
          workspaceId: target.workspaceId,
          channelId: target.channelId,
          channelNumber: "+15550100001",
          content: {
            providerMessageId: rows[0]!.provider_message_id,
            sender: { phoneNumber: "+4915112345678", whatsappLid: null },
            body: { _tag: "text", body: "hi there" },
            quotedProviderMessageId: null,
            at: yield* Clock.currentTimeMillis
          },
          now: Schemas.toTimestamp(yield* Clock.currentTimeMillis)
        })
        assert.isTrue(Option.isNone(again))
        const count = yield* sql`SELECT 1 FROM messages WHERE channel_id = ${target.channelId}`
        assert.strictEqual(count.length, 1)
      }))
  })
})
