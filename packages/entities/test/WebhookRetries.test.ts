/**
 * A webhook delivery's retry on the endpoint entity's clock (docs/WEBHOOKS.md "Webhooks",
 * docs/RETRIES.md): after a failed attempt the delivery waits for its retry time, the production
 * schedule (5-10 s after the first attempt, `retryDelayScale` 1; 7.5 s with the random share fixed at 0.5), and is not attempted a
 * millisecond sooner, even when woken; at its time it is. The entity runs under
 * `Entity.makeTestClient` on the TestClock, so the test moves time instead of sleeping; the
 * receiver is a real HTTP server, and the test waits for it on the live clock.
 */
import { Entity, ShardingConfig } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { EventsRepo, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Events, Ids, Schemas } from "@switchboard/domain"
import { WebhookEndpointEntity, WebhookEndpointProtocol } from "@switchboard/entities"
import { WebhooksConfig, WebhookSigner } from "@switchboard/webhooks"
import { Clock, Effect, Layer, Random, TestClock, TestServices } from "effect"
import { receiver } from "../../../test/support/Receiver.js"

const TestLayer = Layer.mergeAll(
  EventsRepo.EventsRepo.Default,
  WebhookEndpointsRepo.WebhookEndpointsRepo.Default,
  WebhookDeliveriesRepo.WebhookDeliveriesRepo.Default,
  WebhooksConfig.layer({
    allowPrivateTargets: true,
    retryDelayScale: 1,
    resolver: async () => [{ address: "127.0.0.1", family: 4 }]
  }),
  ShardingConfig.layerDefaults
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

/** Waits on the live clock (the receiver and the database are real) until `check` holds. */
const liveEventually = <E, R>(check: Effect.Effect<boolean, E, R>, timeoutMs = 10_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (yield* check) return
      yield* TestServices.provideLive(Effect.sleep("25 millis"))
    }
    return yield* Effect.dieMessage("condition not met in time")
  })

const liveSleep = (ms: number) => TestServices.provideLive(Effect.sleep(ms))

describe("a webhook delivery's retry, on the entity's clock", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.scoped("is attempted again at its retry time (5-10 s after a 500), not a millisecond sooner", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.now())
        // the first attempt is answered 500, the next 200
        const sink = yield* receiver((_, index) => ({ status: index === 0 ? 500 : 200 }))
        const sql = yield* SqlClient.SqlClient
        const config = yield* WebhooksConfig.WebhooksConfig
        const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
        const workspaceId = yield* Ids.newId("ws")
        yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now}, ${now})`
        const endpointId = yield* Ids.newId("wh")
        const secret = WebhookSigner.newSecret()
        yield* (yield* WebhookEndpointsRepo.WebhookEndpointsRepo).insert({
          id: endpointId,
          workspaceId,
          url: `${sink.url}/hook`,
          eventTypes: ["*"],
          description: "",
          secretSealed: config.keyring.seal(secret),
          secretLast4: secret.slice(-4),
          now
        })
        const messageId = `msg_${"0".repeat(25)}1` as const
        const event = yield* sql.withTransaction((yield* EventsRepo.EventsRepo).append({
          workspaceId,
          event: Events.DomainEvent.make("message.sent", {
            object: "message",
            object_id: messageId,
            message_id: messageId,
            from_state: "provider_accepted",
            to_state: "sent",
            category: "utility"
          })
        }))
        const delivery = () =>
          Effect.map(
            sql<{ status: string; attempt_count: number; next_attempt_at: string | Date | null }>`
              SELECT status, attempt_count, next_attempt_at FROM webhook_deliveries WHERE event_id = ${event.id}`,
            (rows) => rows[0]!
          )

        // the entity's random share of the jitter is 0.5: its first retry is 7.5 s after the failure
        const clients = yield* Entity.makeTestClient(
          WebhookEndpointProtocol.WebhookEndpointEntity,
          WebhookEndpointEntity.WebhookEndpointEntityLive
        )
        const endpoint = yield* Effect.withRandom(clients(endpointId), Random.fixed([0.5]))
        yield* endpoint.Wake()
        yield* liveEventually(Effect.map(delivery(), (d) => d.status === "pending" && d.attempt_count === 1))
        assert.strictEqual(sink.received.length, 1)
        const failedAt = yield* Clock.currentTimeMillis
        const retryIn = new Date((yield* delivery()).next_attempt_at!).getTime() - failedAt
        assert.strictEqual(retryIn, 7_500)

        // one millisecond short: woken, the entity looks and finds nothing due
        yield* TestClock.adjust(retryIn - 1)
        yield* endpoint.Wake()
        yield* liveSleep(1_000)
        assert.strictEqual(sink.received.length, 1, "not attempted before its retry time")
        assert.strictEqual((yield* delivery()).status, "pending")

        // at its time: attempted again, and delivered
        yield* TestClock.adjust(1)
        yield* endpoint.Wake()
        yield* liveEventually(Effect.map(delivery(), (d) => d.status === "succeeded"))
        assert.strictEqual(sink.received.length, 2)
        assert.strictEqual(sink.received[1]!.headers["x-webhook-attempt"], "2")
        assert.strictEqual(sink.received[1]!.headers["x-webhook-event-id"], event.id)
      }))
  })
})
