import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { EventsRepo, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { newId, toTimestamp } from "@switchboard/domain"
import { Cluster, WebhookEndpointEntity, WebhookEndpointEntityLive } from "@switchboard/entities"
import { SecretBox, WebhooksConfig, WebhookSigner } from "@switchboard/webhooks"
import { Effect, Layer, Redacted } from "effect"
import { eventually, receiver } from "../../../test/support/Receiver.js"

/**
 * Fault injection around the REAL repository: the next `failDue` calls of `due` die as an
 * unreachable database would (the repository turns SqlError into a defect).
 */
const faults = { failDue: 0, failedDue: 0 }

const FlakyDeliveries = Layer.effect(
  WebhookDeliveriesRepo,
  Effect.map(WebhookDeliveriesRepo, (real) =>
    WebhookDeliveriesRepo.make({
      ...real,
      due: (endpointId, now, limit) =>
        faults.failDue > 0
          ? Effect.suspend(() => {
            faults.failDue--
            faults.failedDue++
            return Effect.die(new Error("connection terminated (injected)"))
          })
          : real.due(endpointId, now, limit)
    }))
).pipe(Layer.provide(WebhookDeliveriesRepo.Default))

// only the entity: no sweeper, so nothing but the entity's own loop can deliver
const TestLayer = WebhookEndpointEntityLive.pipe(
  Layer.provide(Layer.mergeAll(FlakyDeliveries, WebhookEndpointsRepo.Default)),
  Layer.provideMerge(WebhooksConfig.layer({ allowPrivateTargets: true, retryDelayScale: 0.001 })),
  Layer.provideMerge(Layer.mergeAll(EventsRepo.Default, WebhookEndpointsRepo.Default)),
  Layer.provideMerge(Cluster.single),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

/** A workspace with one active endpoint subscribed to everything, pointing at `url`. */
const seedEndpoint = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const endpoints = yield* WebhookEndpointsRepo
    const config = yield* WebhooksConfig.WebhooksConfig
    const now = toTimestamp(Date.now())
    const workspaceId = yield* newId("ws")
    yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now}, ${now})`
    const endpointId = yield* newId("wh")
    const secret = WebhookSigner.newSecret()
    yield* endpoints.insert({
      id: endpointId,
      workspaceId,
      url,
      eventTypes: ["*"],
      description: "",
      secretSealed: SecretBox.seal(Redacted.value(config.encryptionKey), secret),
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
        const events = yield* EventsRepo
        const sql = yield* SqlClient.SqlClient
        faults.failDue = 1
        const endpoint = yield* WebhookEndpointEntity.client
        // the first pull of the activated entity dies ...
        yield* endpoint(endpointId).Wake()
        yield* eventually(() => faults.failedDue >= 1 || undefined, 10_000)
        // ... and an event committed afterwards must still reach the receiver
        const event = yield* sql.withTransaction(
          events.append({ workspaceId, type: "message.queued", data: { object: "message", object_id: "msg_1" } })
        )
        yield* endpoint(endpointId).Wake()
        yield* eventually(() => sink.received.length >= 1 || undefined, 15_000)
        assert.strictEqual(sink.received[0]!.headers["x-webhook-event-id"], event.id)
        assert.strictEqual(sink.received[0]!.body, event.envelope)
      }))
  })
})
