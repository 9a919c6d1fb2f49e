import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { EventsRepo, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { DomainEvent, newId, toTimestamp } from "@switchboard/domain"
import { Effect, Layer, Option } from "effect"

const TestLayer = Layer.mergeAll(EventsRepo.Default, WebhookEndpointsRepo.Default, WebhookDeliveriesRepo.Default).pipe(
  Layer.provideMerge(TestDatabase.sqlLayer)
)

const at = (offsetMs: number) => toTimestamp(Date.now() + offsetMs)

const workspace = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = yield* newId("ws")
  yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${id}, 'w', ${at(0)}, ${at(0)})`
  return id
})

const endpoint = (workspaceId: string) =>
  Effect.gen(function*() {
    const id = yield* newId("wh")
    yield* (yield* WebhookEndpointsRepo).insert({
      id,
      workspaceId,
      url: "https://hooks.example.com/in",
      eventTypes: ["*"],
      description: "",
      secretSealed: "v1:unused",
      secretLast4: "abcd",
      now: at(0)
    })
    return id
  })

const event = (workspaceId: string, occurredAt: string) =>
  Effect.flatMap(EventsRepo, (events) =>
    events.append({
      workspaceId,
      occurredAt,
      event: DomainEvent.make("message.queued", {
        object: "message",
        object_id: "msg_00000000000000000000000001",
        message_id: "msg_00000000000000000000000001",
        from_state: null,
        to_state: "queued",
        category: "utility"
      })
    }))

describe("WebhookDeliveriesRepo", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("gives the sweeper only endpoints that may be sent to, the longest waiting first", () =>
      Effect.gen(function*() {
        const endpoints = yield* WebhookEndpointsRepo
        const deliveries = yield* WebhookDeliveriesRepo
        const ws = yield* workspace
        const paused = yield* endpoint(ws)
        yield* endpoints.update(ws, paused, { status: "paused" }, at(0))
        yield* event(ws, at(-10_000)) // held for the paused endpoint only
        const active = yield* endpoint(ws)
        yield* event(ws, at(-5_000)) // one for each
        const deletedWhilePaused = yield* endpoint(ws)
        yield* event(ws, at(-2_000))
        yield* endpoints.update(ws, deletedWhilePaused, { status: "paused" }, at(0))
        yield* endpoints.softDelete(ws, deletedWhilePaused, at(0))

        // a paused endpoint's held deliveries never take a wake-up slot (with many paused
        // endpoints they starved the active ones); a deleted one is woken to end its deliveries
        assert.deepStrictEqual(yield* deliveries.endpointsWithDueWork(at(0), 10), [active, deletedWhilePaused])
        assert.deepStrictEqual(yield* deliveries.endpointsWithDueWork(at(0), 1), [active])
        assert.deepStrictEqual(yield* deliveries.endpointsWithDueWork(at(-6_000), 10), [])

        yield* endpoints.update(ws, paused, { status: "active" }, at(0))
        assert.deepStrictEqual(yield* deliveries.endpointsWithDueWork(at(0), 10), [paused, active, deletedWhilePaused])
      }))

    it.effect("records an attempt only while the delivery is still in that attempt (a requeued one is not overwritten)", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveriesRepo
        const ws = yield* workspace
        const id = yield* endpoint(ws)
        yield* event(ws, at(-1_000))
        const [due] = yield* deliveries.due(id, at(0), 10)
        const first = yield* deliveries.claim(due!.id, at(0))
        assert.strictEqual(Option.getOrThrow(first).attempt_count, 1)
        // attempt 1 outlives the stuck limit: the sweeper hands the delivery out again
        yield* deliveries.requeueStuck(at(1_000), at(0))
        const second = yield* deliveries.claim(due!.id, at(0))
        assert.strictEqual(Option.getOrThrow(second).attempt_count, 2)

        const outcome = { at: at(0), responseStatus: 200, reason: "ok" as const, latencyMs: 5 }
        const late = yield* deliveries.record({
          id: due!.id,
          attempt: 1,
          ...outcome,
          next: { status: "succeeded", nextAttemptAt: null }
        })
        assert.isFalse(late)
        const meanwhile = Option.getOrThrow(yield* deliveries.find(ws, due!.id))
        assert.strictEqual(meanwhile.status, "delivering")
        assert.deepStrictEqual(meanwhile.attempts, [])

        const current = yield* deliveries.record({
          id: due!.id,
          attempt: 2,
          ...outcome,
          next: { status: "succeeded", nextAttemptAt: null }
        })
        assert.isTrue(current)
        const done = Option.getOrThrow(yield* deliveries.find(ws, due!.id))
        assert.strictEqual(done.status, "succeeded")
        assert.deepStrictEqual(done.attempts.map((a) => a.attempt), [2])
        // recording the same attempt again (a redelivered handler) changes nothing
        assert.isFalse(
          yield* deliveries.record({
            id: due!.id,
            attempt: 2,
            ...outcome,
            next: { status: "succeeded", nextAttemptAt: null }
          })
        )
      }))
  })
})
