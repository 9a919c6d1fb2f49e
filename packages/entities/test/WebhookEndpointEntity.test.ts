import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { EventsRepo, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Events, Ids, Schemas } from "@switchboard/domain"
import { Cluster, WebhookEndpointEntity, WebhookEndpointProtocol } from "@switchboard/entities"
import { WebhooksConfig, WebhookSigner } from "@switchboard/webhooks"
import { Effect, Layer, Option } from "effect"
import { eventually, receiver } from "../../../test/support/Receiver.js"

/** A message status event for message number `n` (a well-formed id). */
const messageEvent = (type: "message.queued" | "message.sent" | "message.read", n: number) => {
  const id = `msg_${String(n).padStart(26, "0")}` as const
  return Events.DomainEvent.make(type, {
    object: "message",
    object_id: id,
    message_id: id,
    from_state: null,
    to_state: type === "message.queued" ? "queued" : type === "message.sent" ? "sent" : "read",
    category: "utility"
  })
}

/**
 * Fault injection around the REAL repository: the next `failDue` pulls (`claimDue`) die as an
 * unreachable database would (the repository turns SqlError into a defect).
 */
const faults = { failDue: 0, failedDue: 0, failResolve: 0, hangResolve: 0 }

/**
 * Every name resolves to loopback, except that the next `hangResolve` lookups never answer and
 * the next `failResolve` lookups fail.
 */
const resolver = async (_host: string): Promise<ReadonlyArray<{ address: string; family: number }>> => {
  if (faults.hangResolve > 0) {
    faults.hangResolve--
    return new Promise(() => {})
  }
  if (faults.failResolve > 0) {
    faults.failResolve--
    throw Object.assign(new Error("getaddrinfo EAI_AGAIN (injected)"), { code: "EAI_AGAIN" })
  }
  return [{ address: "127.0.0.1", family: 4 }]
}

const FlakyDeliveries = Layer.effect(
  WebhookDeliveriesRepo.WebhookDeliveriesRepo,
  Effect.map(WebhookDeliveriesRepo.WebhookDeliveriesRepo, (real) =>
    WebhookDeliveriesRepo.WebhookDeliveriesRepo.make({
      ...real,
      claimDueMany: (requests) =>
        faults.failDue > 0
          ? Effect.suspend(() => {
            faults.failDue--
            faults.failedDue++
            return Effect.die(new Error("connection terminated (injected)"))
          })
          : real.claimDueMany(requests)
    }))
).pipe(Layer.provide(WebhookDeliveriesRepo.WebhookDeliveriesRepo.Default))

// only the entity: no sweeper, so nothing but the entity's own loop can deliver
const TestLayer = WebhookEndpointEntity.WebhookEndpointEntityLive.pipe(
  Layer.provide(Layer.mergeAll(FlakyDeliveries, WebhookEndpointsRepo.WebhookEndpointsRepo.Default)),
  Layer.provideMerge(WebhooksConfig.layer({ allowPrivateTargets: true, retryDelayScale: 0.001, resolver })),
  Layer.provideMerge(
    Layer.mergeAll(
      EventsRepo.EventsRepo.Default,
      WebhookEndpointsRepo.WebhookEndpointsRepo.Default,
      WebhookDeliveriesRepo.WebhookDeliveriesRepo.Default
    )
  ),
  Layer.provideMerge(Cluster.single),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

/** A workspace with one active endpoint subscribed to everything, pointing at `url`. */
const seedEndpoint = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const endpoints = yield* WebhookEndpointsRepo.WebhookEndpointsRepo
    const config = yield* WebhooksConfig.WebhooksConfig
    const now = Schemas.toTimestamp(Date.now())
    const workspaceId = yield* Ids.newId("ws")
    yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now}, ${now})`
    const endpointId = yield* Ids.newId("wh")
    const secret = WebhookSigner.newSecret()
    yield* endpoints.insert({
      id: endpointId,
      workspaceId,
      url,
      eventTypes: ["*"],
      description: "",
      secretSealed: config.keyring.seal(secret),
      secretLast4: secret.slice(-4),
      now
    })
    return { workspaceId, endpointId }
  })

describe("WebhookEndpoint entity", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("keeps delivering after a step of its loop failed (e.g. the database was unreachable)", () =>
      Effect.gen(function*() {
        const sink = yield* receiver()
        const { endpointId, workspaceId } = yield* seedEndpoint(`${sink.url}/hook`)
        const events = yield* EventsRepo.EventsRepo
        const sql = yield* SqlClient.SqlClient
        faults.failDue = 1
        const endpoint = yield* WebhookEndpointProtocol.WebhookEndpointEntity.client
        // the first pull of the activated entity dies ...
        yield* endpoint(endpointId).Wake()
        yield* eventually(() => faults.failedDue >= 1 || undefined, 10_000)
        // ... and an event committed afterwards must still reach the receiver
        const event = yield* sql.withTransaction(
          events.append({ workspaceId, event: messageEvent("message.queued", 1) })
        )
        yield* endpoint(endpointId).Wake()
        yield* eventually(() => sink.received.length >= 1 || undefined, 15_000)
        assert.strictEqual(sink.received[0]!.headers["x-webhook-event-id"], event.id)
        assert.strictEqual(sink.received[0]!.body, event.envelope)
      }))

    it.scoped("keeps every delivery slot busy while one answer is slow", () =>
      Effect.gen(function*() {
        // the first request is answered after 4 s, every other one at once
        const sink = yield* receiver((_, index) => ({ status: 200, ...(index === 0 ? { delayMs: 4_000 } : {}) }))
        const { endpointId, workspaceId } = yield* seedEndpoint(`${sink.url}/hook`)
        const events = yield* EventsRepo.EventsRepo
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(Effect.forEach(
          Array.from({ length: 8 }, (_, i) => i),
          (i) => events.append({ workspaceId, event: messageEvent("message.read", i) })
        ))
        yield* (yield* WebhookEndpointProtocol.WebhookEndpointEntity.client)(endpointId).Wake()
        // with 4 slots and one held by the slow answer, the other 7 go through the 3 free ones
        yield* eventually(() => sink.received.length >= 8 || undefined, 3_000)
        const slow = sink.received[0]!.headers["x-webhook-delivery-id"] as string
        const [row] = yield* sql<{ status: string }>`SELECT status FROM webhook_deliveries WHERE id = ${slow}`
        assert.strictEqual(row!.status, "delivering")
      }))

    it.scoped("never has more than 4 attempts of an endpoint running", () =>
      Effect.gen(function*() {
        let open = 0
        let most = 0
        const sink = yield* receiver(() => {
          open++
          most = Math.max(most, open)
          setTimeout(() => open--, 300)
          return { status: 200, delayMs: 300 }
        })
        const { endpointId, workspaceId } = yield* seedEndpoint(`${sink.url}/hook`)
        const events = yield* EventsRepo.EventsRepo
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(Effect.forEach(
          Array.from({ length: 12 }, (_, i) => i),
          (i) => events.append({ workspaceId, event: messageEvent("message.sent", i) })
        ))
        yield* (yield* WebhookEndpointProtocol.WebhookEndpointEntity.client)(endpointId).Wake()
        yield* eventually(() => sink.received.length >= 12 || undefined, 10_000)
        assert.strictEqual(most, 4)
      }))

    it.scoped("retries an attempt whose host name did not resolve (a DNS error is a network error)", () =>
      Effect.gen(function*() {
        faults.failResolve = 1
        const done = yield* deliverThroughFlakyDns
        assert.deepStrictEqual(done.attempts.map((a) => a.failure_reason), ["network_error", "ok"])
      }))

    it.scoped("gives up waiting for a resolver that never answers and retries", () =>
      Effect.gen(function*() {
        faults.hangResolve = 1
        const done = yield* deliverThroughFlakyDns
        assert.deepStrictEqual(done.attempts.map((a) => a.failure_reason), ["network_error", "ok"])
      }))
  })
})

/** One event to an endpoint on a host name (resolved by the test resolver); its finished delivery. */
const deliverThroughFlakyDns = Effect.gen(function*() {
  const sink = yield* receiver()
  const port = new URL(sink.url).port
  const { endpointId, workspaceId } = yield* seedEndpoint(`http://hooks.flaky-dns.test:${port}/hook`)
  const events = yield* EventsRepo.EventsRepo
  const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
  const sql = yield* SqlClient.SqlClient
  const event = yield* sql.withTransaction(
    events.append({ workspaceId, event: messageEvent("message.sent", 2) })
  )
  yield* (yield* WebhookEndpointProtocol.WebhookEndpointEntity.client)(endpointId).Wake()
  yield* eventually(() => sink.received.length >= 1 || undefined, 15_000)
  assert.strictEqual(sink.received[0]!.headers["x-webhook-event-id"], event.id)
  assert.strictEqual(sink.received[0]!.headers["x-webhook-attempt"], "2")
  assert.strictEqual(sink.received[0]!.headers.host, `hooks.flaky-dns.test:${port}`)
  const [row] = yield* sql<{ id: string }>`SELECT id FROM webhook_deliveries WHERE event_id = ${event.id}`
  const done = yield* eventuallyEffect(
    Effect.map(
      deliveries.find(workspaceId, row!.id),
      (d) => Option.getOrUndefined(Option.filter(d, (x) => x.status === "succeeded"))
    )
  )
  return done
})

const eventuallyEffect = <A, E, R>(check: Effect.Effect<A | undefined, E, R>, timeoutMs = 10_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const value = yield* check
      if (value !== undefined) return value
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage("condition not met in time")
  })
