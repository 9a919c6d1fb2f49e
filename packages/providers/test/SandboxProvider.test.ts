import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { MediaRepo, MediaStore, SandboxNetworkRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, Messaging, Schemas } from "@switchboard/domain"
import { type ChannelProvider, ProvidersConfig, SandboxNumbers, SandboxProvider } from "@switchboard/providers"
import { Clock, Effect, Exit, Layer, Scope, Stream, TestClock, TestContext } from "effect"

const DELAYS = [60, 120, 180] as const

const TestLayer = SandboxProvider.SandboxProvider.Default.pipe(
  Layer.provideMerge(ProvidersConfig.layer({ sandboxReceiptDelaysMs: DELAYS })),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

const makeChannel = Effect.gen(function*() {
  const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
  return new Messaging.Channel({
    id: yield* Ids.newId("ch"),
    object: "channel",
    workspace_id: yield* Ids.newId("ws"),
    name: "sandbox",
    provider: "sandbox",
    status: "connected",
    status_reason: null,
    call_policy: Messaging.DEFAULT_CALL_POLICY,
    is_default: true,
    phone_number: "+15550100001",
    created_at: now,
    updated_at: now,
    archived_at: null
  })
})

/** Opens a connection in its own scope and collects everything it reports. */
const open = (channel: Messaging.Channel) =>
  Effect.gen(function*() {
    const sandbox = yield* SandboxProvider.SandboxProvider
    const scope = yield* Scope.make()
    const connection = yield* sandbox.connect(channel).pipe(Scope.extend(scope))
    const collected: Array<ChannelProvider.ProviderEvent> = []
    yield* connection.events.pipe(
      Stream.runForEach((event) => Effect.sync(() => collected.push(event))),
      Effect.forkIn(scope)
    )
    const close = Effect.gen(function*() {
      // let the collector take what is queued
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      yield* Scope.close(scope, Exit.void)
      return collected as ReadonlyArray<ChannelProvider.ProviderEvent>
    })
    return { connection, close }
  })

const text = (id: string, to = "+4915112345678") => ({ id, to, body: "hello" })

const receiptsOf = (events: ReadonlyArray<ChannelProvider.ProviderEvent>, id: string) =>
  events.flatMap((e) => (e._tag === "Receipt" && e.messageId === id ? [e] : []))

/** Waits until the connection has reported everything it scheduled. */
const settled = (...connections: ReadonlyArray<ChannelProvider.ChannelConnection>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const pending = yield* Effect.forEach(connections, (c) => c.pendingReceipts)
      if (pending.every((n) => n === 0)) return
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage("receipts still pending after 10 s")
  })

/** Sends, waiting out the network's 2 msg/s bucket when it refuses. */
const sendPaced = (connection: ChannelProvider.ChannelConnection, message: ReturnType<typeof text>) =>
  Effect.gen(function*() {
    while (true) {
      const result = yield* connection.send(message)
      if (result._tag === "Refused" && result.code === "PROVIDER_RATE_LIMITED") {
        yield* Effect.sleep("250 millis")
        continue
      }
      return result
    }
  })

describe("sandbox network", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("accepts a message and reports sent, delivered and read in order", () =>
      Effect.gen(function*() {
        const { close, connection } = yield* open(yield* makeChannel)
        const id = yield* Ids.newId("msg")
        assert.deepStrictEqual(yield* connection.send(text(id)), { _tag: "Accepted" })
        assert.strictEqual(yield* connection.pendingReceipts, 1)
        // acceptance fixed the receipts' times (nothing is written per receipt)
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ accepted_at: Date; sent_at: Date; delivered_at: Date; read_at: Date }>`
          SELECT accepted_at, sent_at, delivered_at, read_at FROM sandbox_deliveries WHERE message_id = ${id}`
        const accepted = row!.accepted_at.getTime()
        assert.deepStrictEqual(
          [row!.sent_at, row!.delivered_at, row!.read_at].map((t) => t.getTime() - accepted),
          [...DELAYS]
        )
        yield* settled(connection)
        const events = receiptsOf(yield* close, id)
        assert.deepStrictEqual(events.map((e) => e.status), ["sent", "delivered", "read"])
        assert.deepStrictEqual(events.map((e) => e.at), DELAYS.map((d) => accepted + d))
      }))

    it.effect("delivers a message dispatched twice, even over two connections, only once", () =>
      Effect.gen(function*() {
        const channel = yield* makeChannel
        const a = yield* open(channel)
        const b = yield* open(channel)
        const id = yield* Ids.newId("msg")
        assert.strictEqual((yield* a.connection.send(text(id)))._tag, "Accepted")
        assert.strictEqual((yield* b.connection.send(text(id)))._tag, "Accepted")
        assert.strictEqual((yield* sendPaced(a.connection, text(id)))._tag, "Accepted")
        yield* settled(a.connection, b.connection)
        const fromA = receiptsOf(yield* a.close, id)
        const fromB = receiptsOf(yield* b.close, id)
        // each connection tells every stage (a repeated offer hears the receipts again)
        assert.sameMembers([...new Set(fromA.map((e) => e.status))], ["sent", "delivered", "read"])
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ offers: number; delivered_at: Date }>`SELECT offers, delivered_at
          FROM sandbox_deliveries WHERE message_id = ${id}`
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]!.offers, 3)
        // every report of the delivery, from either connection, is of the same single delivery
        const deliveredAt = rows[0]!.delivered_at.getTime()
        for (const e of [...fromA, ...fromB].filter((e) => e.status === "delivered")) {
          assert.strictEqual(e.at, deliveredAt)
        }
      }))

    it.effect("honours the magic recipients", () =>
      Effect.gen(function*() {
        const { close, connection } = yield* open(yield* makeChannel)
        const permanent = yield* Ids.newId("msg")
        const flaky = yield* Ids.newId("msg")
        const staysSent = yield* Ids.newId("msg")
        const p = yield* sendPaced(connection, text(permanent, SandboxNumbers.MAGIC.failsPermanently))
        assert.deepStrictEqual(p, {
          _tag: "Refused",
          retryable: false,
          code: "recipient_unreachable",
          reason: "The recipient cannot receive messages"
        })
        const tries = [
          yield* sendPaced(connection, text(flaky, SandboxNumbers.MAGIC.failsTwiceThenSucceeds)),
          yield* sendPaced(connection, text(flaky, SandboxNumbers.MAGIC.failsTwiceThenSucceeds)),
          yield* sendPaced(connection, text(flaky, SandboxNumbers.MAGIC.failsTwiceThenSucceeds))
        ]
        assert.deepStrictEqual(tries.map((r) => r._tag === "Refused" ? r.retryable : "accepted"), [
          true,
          true,
          "accepted"
        ])
        assert.strictEqual(
          (yield* sendPaced(connection, text(staysSent, SandboxNumbers.MAGIC.staysAtSent)))._tag,
          "Accepted"
        )
        yield* settled(connection)
        // longer than the read delay: nothing more comes for the one that stays at sent
        yield* Effect.sleep("300 millis")
        const events = yield* close
        assert.deepStrictEqual(receiptsOf(events, permanent), [])
        assert.deepStrictEqual(receiptsOf(events, flaky).map((e) => e.status), ["sent", "delivered", "read"])
        assert.deepStrictEqual(receiptsOf(events, staysSent).map((e) => e.status), ["sent"])
        const sql = yield* SqlClient.SqlClient
        const [stays] = yield* sql<{ sent_at: Date | null; delivered_at: Date | null; read_at: Date | null }>`
          SELECT sent_at, delivered_at, read_at FROM sandbox_deliveries WHERE message_id = ${staysSent}`
        assert.isNotNull(stays!.sent_at)
        assert.deepStrictEqual([stays!.delivered_at, stays!.read_at], [null, null])
      }))

    it.effect("accepts at most 2 messages per second", () =>
      Effect.gen(function*() {
        const { close, connection } = yield* open(yield* makeChannel)
        const results = []
        for (let i = 0; i < 4; i++) results.push(yield* connection.send(text(yield* Ids.newId("msg"))))
        assert.deepStrictEqual(results.map((r) => r._tag === "Refused" ? r.code : r._tag), [
          "Accepted",
          "Accepted",
          "PROVIDER_RATE_LIMITED",
          "PROVIDER_RATE_LIMITED"
        ])
        assert.isTrue(results.every((r) => r._tag === "Accepted" || r.retryable))
        yield* TestClock.adjust("499 millis")
        assert.strictEqual((yield* connection.send(text(yield* Ids.newId("msg"))))._tag, "Refused")
        yield* TestClock.adjust("1 millis")
        assert.strictEqual((yield* connection.send(text(yield* Ids.newId("msg"))))._tag, "Accepted")
        yield* close
      }).pipe(Effect.provide(TestContext.TestContext)))

    it.effect("reports what is still under way to a channel that reconnects", () =>
      Effect.gen(function*() {
        const channel = yield* makeChannel
        const first = yield* open(channel)
        const id = yield* Ids.newId("msg")
        assert.strictEqual((yield* first.connection.send(text(id)))._tag, "Accepted")
        // the connection goes away (whether it got to report a stage depends on the machine's pace:
        // the new one reports every stage again, as a real network may)
        yield* first.close
        const second = yield* open(channel)
        yield* settled(second.connection)
        assert.deepStrictEqual(receiptsOf(yield* second.close, id).map((e) => e.status), ["sent", "delivered", "read"])
      }))

    const hi = { from: "+4915112345678", body: { _tag: "text", body: "hi" }, quotedProviderMessageId: null } as const
    it.effect("simulates an inbound message", () =>
      Effect.gen(function*() {
        const { close, connection } = yield* open(yield* makeChannel)
        yield* connection.simulateInbound!(hi)
        yield* connection.simulateInbound!(hi)
        const inbound = (yield* close).filter((e) => e._tag === "Inbound")
        assert.deepStrictEqual(
          inbound.map((e) => [e.sender.phoneNumber, e.body._tag === "text" ? e.body.body : e.body._tag]),
          [["+4915112345678", "hi"], [
            "+4915112345678",
            "hi"
          ]]
        )
        assert.notStrictEqual(inbound[0]!.providerMessageId, inbound[1]!.providerMessageId)
      }))
  })
})

describe("sandbox network, a runner's channels", () => {
  // the network's statements, as the provider makes them: offers per statement
  const statements: Array<number> = []
  const CountingNetwork = Layer.effect(
    SandboxNetworkRepo.SandboxNetworkRepo,
    Effect.map(SandboxNetworkRepo.SandboxNetworkRepo, (network) =>
      SandboxNetworkRepo.SandboxNetworkRepo.make({
        ...network,
        offers: (batch) => Effect.zipRight(Effect.sync(() => statements.push(batch.length)), network.offers(batch))
      }))
  ).pipe(Layer.provide(SandboxNetworkRepo.SandboxNetworkRepo.Default))
  const Counting = SandboxProvider.SandboxProvider.DefaultWithoutDependencies.pipe(
    Layer.provide(Layer.mergeAll(CountingNetwork, MediaRepo.MediaRepo.Default, MediaStore.MediaStore.Default)),
    Layer.provideMerge(ProvidersConfig.layer({ sandboxReceiptDelaysMs: DELAYS })),
    Layer.provideMerge(TestDatabase.sqlLayer)
  )

  layer(Counting, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("offers the messages of channels dispatching at once in one statement", () =>
      Effect.gen(function*() {
        const opened = yield* Effect.forEach([1, 2, 3], () => Effect.flatMap(makeChannel, open))
        const ids = yield* Effect.forEach(opened, () => Ids.newId("msg"))
        const results = yield* Effect.forEach(opened, ({ connection }, i) => connection.send(text(ids[i]!)), {
          concurrency: "unbounded"
        })
        assert.deepStrictEqual(results.map((r) => r._tag), ["Accepted", "Accepted", "Accepted"])
        assert.deepStrictEqual(statements, [3], "one statement for the three channels' offers")
        // each connection hears its own message's receipts, at the times the shared statement fixed
        yield* settled(...opened.map((o) => o.connection))
        for (const [i, o] of opened.entries()) {
          assert.deepStrictEqual(receiptsOf(yield* o.close, ids[i]!).map((e) => e.status), [
            "sent",
            "delivered",
            "read"
          ])
        }
      }))
  })
})
