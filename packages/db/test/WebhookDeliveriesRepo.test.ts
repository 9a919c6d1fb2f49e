import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { EventsRepo, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Events, Ids, Schemas } from "@switchboard/domain"
import { Effect, Layer, Option } from "effect"

const TestLayer = Layer.mergeAll(
  EventsRepo.EventsRepo.Default,
  WebhookEndpointsRepo.WebhookEndpointsRepo.Default,
  WebhookDeliveriesRepo.WebhookDeliveriesRepo.Default
).pipe(
  Layer.provideMerge(TestDatabase.sqlLayer)
)

const at = (offsetMs: number) => Schemas.toTimestamp(Date.now() + offsetMs)

const workspace = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = yield* Ids.newId("ws")
  yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${id}, 'w', ${at(0)}, ${at(0)})`
  return id
})

const endpoint = (workspaceId: string) =>
  Effect.gen(function*() {
    const id = yield* Ids.newId("wh")
    yield* (yield* WebhookEndpointsRepo.WebhookEndpointsRepo).insert({
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
  Effect.flatMap(EventsRepo.EventsRepo, (events) =>
    events.append({
      workspaceId,
      occurredAt,
      event: Events.DomainEvent.make("message.queued", {
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
        const endpoints = yield* WebhookEndpointsRepo.WebhookEndpointsRepo
        const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
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
        const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
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

    it.effect("claims for several endpoints in one call: each its own oldest due deliveries up to its limit, none twice", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
        const endpoints = yield* WebhookEndpointsRepo.WebhookEndpointsRepo
        // one workspace per endpoint: an event goes to that endpoint only
        const [ws1, ws2, ws3] = [yield* workspace, yield* workspace, yield* workspace]
        const [e1, e2, e3] = [yield* endpoint(ws1), yield* endpoint(ws2), yield* endpoint(ws3)]
        for (const offset of [-3_000, -2_000, -1_000]) yield* event(ws1, at(offset))
        for (const offset of [-3_000, -2_000]) yield* event(ws2, at(offset))
        yield* event(ws3, at(-1_000))
        yield* endpoints.update(ws3, e3, { status: "paused" }, at(0))
        const oldestFirst = (ws: string, endpointId: string) =>
          Effect.map(
            deliveries.list(ws, { endpointId }, 10, undefined),
            (page) => page.map((d) => d.id).reverse()
          )
        const e1Ids = yield* oldestFirst(ws1, e1)
        const e2Ids = yield* oldestFirst(ws2, e2)

        const answers = yield* deliveries.claimDueMany([
          { endpointId: e1, now: at(0), limit: 2 },
          { endpointId: e2, now: at(0), limit: 5 },
          { endpointId: e3, now: at(0), limit: 5 },
          // the same endpoint again (never claimed twice: served after the first)
          { endpointId: e1, now: at(0), limit: 5 }
        ])
        assert.deepStrictEqual(answers.map((a) => a.map((d) => d.id)), [
          e1Ids.slice(0, 2),
          e2Ids,
          [],
          e1Ids.slice(2)
        ])
        assert.isTrue(answers.flat().every((d) => d.attempt_count === 1 && d.endpoint.status === "active"))
        // nothing left to claim
        const again = yield* deliveries.claimDueMany([{ endpointId: e1, now: at(0), limit: 5 }])
        assert.deepStrictEqual(again, [[]])
      }))

    it.effect("records several successes in one call, each only while still in its attempt, with its own attempt row", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
        const [ws1, ws2] = [yield* workspace, yield* workspace]
        const [e1, e2] = [yield* endpoint(ws1), yield* endpoint(ws2)]
        yield* event(ws1, at(-2_000))
        yield* event(ws1, at(-1_000))
        yield* event(ws2, at(-1_000))
        yield* sql`UPDATE webhook_endpoints SET consecutive_failures = 3 WHERE id IN (${e1}, ${e2})`
        const [[a, b], [c]] = yield* deliveries.claimDueMany([
          { endpointId: e1, now: at(0), limit: 5 },
          { endpointId: e2, now: at(0), limit: 5 }
        ])
        // c's attempt 1 outlives the stuck limit and is handed out again: its late success is not recorded
        yield* sql`UPDATE webhook_deliveries SET status = 'pending', updated_at = ${at(0)} WHERE id = ${c!.id}`
        const [[c2]] = yield* deliveries.claimDueMany([{ endpointId: e2, now: at(0), limit: 5 }])
        assert.strictEqual(c2!.attempt_count, 2)

        const success = (id: string, endpointId: string, attempt: number) => ({
          id,
          endpointId,
          attempt,
          at: at(0),
          responseStatus: 200,
          latencyMs: 7
        })
        const recorded = yield* deliveries.recordSuccesses([
          success(b!.id, e1, 1),
          success(c!.id, e2, 1),
          success(a!.id, e1, 1)
        ])
        assert.deepStrictEqual([...recorded].sort(), [a!.id, b!.id].sort())
        for (const id of [a!.id, b!.id]) {
          const done = Option.getOrThrow(yield* deliveries.find(ws1, id))
          assert.strictEqual(done.status, "succeeded")
          assert.deepStrictEqual(done.attempts.map((x) => [x.attempt, x.response_status, x.latency_ms]), [[1, 200, 7]])
        }
        const stillRunning = Option.getOrThrow(yield* deliveries.find(ws2, c!.id))
        assert.strictEqual(stillRunning.status, "delivering")
        assert.deepStrictEqual(stillRunning.attempts, [])
        // the counter is reset only where a success was recorded
        const counters = yield* sql<{ id: string; consecutive_failures: number }>`SELECT id, consecutive_failures
          FROM webhook_endpoints WHERE id IN (${e1}, ${e2})`
        assert.deepStrictEqual(
          Object.fromEntries(counters.map((r) => [r.id, r.consecutive_failures])),
          { [e1]: 0, [e2]: 3 }
        )
        // the same successes again (a redelivered attempt) record nothing
        assert.strictEqual((yield* deliveries.recordSuccesses([success(a!.id, e1, 1)])).size, 0)
      }))
  })
})
