/** Webhook endpoint and delivery use-cases. */
import { EventsRepo, Transactions, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import {
  EmittedEvents,
  Errors,
  EventCatalogue,
  Events,
  Ids,
  Pagination,
  Schemas,
  Webhooks as DomainWebhooks
} from "@switchboard/domain"
import { WebhookEndpointProtocol } from "@switchboard/entities/protocol"
import { UrlPolicy, WebhooksConfig, WebhookSigner } from "@switchboard/webhooks"
import { Clock, Effect, Option } from "effect"
import { REFUSAL_WORDS } from "../EgressRefusals.js"
import { Entitlements } from "./Entitlements.js"

const endpointNotFound = (id: string) =>
  new Errors.NotFound({ message: `No webhook endpoint ${id}`, details: { resource: "webhook_endpoint", id } })

export class Webhooks extends Effect.Service<Webhooks>()("@switchboard/service-api/Webhooks", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const endpoints = yield* WebhookEndpointsRepo.WebhookEndpointsRepo
    const deliveries = yield* WebhookDeliveriesRepo.WebhookDeliveriesRepo
    const events = yield* EventsRepo.EventsRepo
    const entitlements = yield* Entitlements
    const config = yield* WebhooksConfig.WebhooksConfig
    const endpointClient = yield* WebhookEndpointProtocol.WebhookEndpointEntity.client
    const keyring = config.keyring
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)
    const wake = (id: string) =>
      endpointClient(id).Wake().pipe(Effect.catchAllCause(() => Effect.void), Effect.forkDaemon)

    const checkUrl = Effect.fn("Webhooks.checkUrl")(function*(url: string) {
      const result = yield* Effect.promise(() =>
        UrlPolicy.resolveTarget(url, config.allowPrivateTargets, config.resolver)
      )
      if (typeof result === "string") {
        return yield* new Errors.ValidationError({
          message: REFUSAL_WORDS[result],
          details: { reason: result, issues: [{ path: ["url"], message: REFUSAL_WORDS[result] }] }
        })
      }
    })

    /** An unknown type is a 422 with `details.reason` (the names are never echoed). */
    const checkEventTypes = Effect.fn("Webhooks.checkEventTypes")(function*(types: ReadonlyArray<string>) {
      const unknown = types.flatMap((type, index) => DomainWebhooks.isEventTypeOrAll(type) ? [] : [index])
      if (unknown.length > 0) {
        const message = "Unknown event type; see GET /v1/webhook-event-types, or use * for all"
        return yield* new Errors.ValidationError({
          message,
          details: { reason: "unknown_event_type", issues: unknown.map((i) => ({ path: ["event_types", i], message })) }
        })
      }
    })

    const create = Effect.fn("Webhooks.create")(function*(workspaceId: string, input: {
      readonly url: string
      readonly event_types: ReadonlyArray<string>
      readonly description?: string | undefined
    }) {
      yield* checkEventTypes(input.event_types)
      yield* checkUrl(input.url)
      const secret = WebhookSigner.newSecret()
      const id = yield* Ids.newId("wh")
      const at = yield* now
      yield* transactions.run(Effect.gen(function*() {
        yield* entitlements.check(workspaceId, "webhook_endpoints", yield* endpoints.count(workspaceId))
        yield* endpoints.insert({
          id,
          workspaceId,
          url: input.url,
          eventTypes: Array.from(new Set(input.event_types)),
          description: input.description ?? "",
          secretSealed: keyring.seal(secret),
          secretLast4: secret.slice(-4),
          now: at
        })
      }))
      const row = Option.getOrThrow(yield* endpoints.find(workspaceId, id))
      return new DomainWebhooks.WebhookEndpointWithSecret({ ...row.endpoint, secret })
    })

    const get = Effect.fn("Webhooks.get")(function*(workspaceId: string, id: DomainWebhooks.WebhookEndpoint["id"]) {
      const row = yield* endpoints.find(workspaceId, id)
      if (Option.isNone(row)) return yield* endpointNotFound(id)
      return row.value.endpoint
    })

    const list = Effect.fn("Webhooks.list")(
      function*(
        workspaceId: string,
        query: { readonly limit?: number | undefined; readonly after?: Pagination.CursorPosition | undefined }
      ) {
        const limit = query.limit ?? Pagination.DEFAULT_LIMIT
        return Pagination.toPage(yield* endpoints.list(workspaceId, limit, query.after), limit, (e) => e)
      }
    )

    const update = Effect.fn("Webhooks.update")(
      function*(workspaceId: string, id: DomainWebhooks.WebhookEndpoint["id"], changes: {
        readonly url?: string | undefined
        readonly event_types?: ReadonlyArray<string> | undefined
        readonly description?: string | undefined
        readonly status?: "active" | "paused" | undefined
      }) {
        if (changes.event_types !== undefined) yield* checkEventTypes(changes.event_types)
        if (changes.url !== undefined) yield* checkUrl(changes.url)
        const row = yield* endpoints.update(workspaceId, id, {
          url: changes.url,
          eventTypes: changes.event_types,
          description: changes.description,
          status: changes.status,
          fromStatuses: changes.status === undefined ? undefined : DomainWebhooks.clientStatusSources(changes.status)
        }, yield* now)
        if (Option.isNone(row)) {
          const current = yield* endpoints.find(workspaceId, id)
          if (Option.isNone(current)) return yield* endpointNotFound(id)
          return yield* new Errors.Conflict({
            message: `A ${current.value.endpoint.status} endpoint can only be set to active; nothing was changed`,
            details: { reason: "invalid_status_transition", status: current.value.endpoint.status }
          })
        }
        if (changes.status === "active") yield* wake(id)
        return row.value.endpoint
      }
    )

    const remove = Effect.fn("Webhooks.remove")(
      function*(workspaceId: string, id: DomainWebhooks.WebhookEndpoint["id"]) {
        if (!(yield* endpoints.softDelete(workspaceId, id, yield* now))) return yield* endpointNotFound(id)
        yield* wake(id)
        return { id, object: "webhook_endpoint" as const, deleted: true as const }
      }
    )

    const rotateSecret = Effect.fn("Webhooks.rotateSecret")(
      function*(workspaceId: string, id: DomainWebhooks.WebhookEndpoint["id"]) {
        const secret = WebhookSigner.newSecret()
        const nowMs = yield* Clock.currentTimeMillis
        const row = yield* endpoints.rotate({
          workspaceId,
          id,
          secretSealed: keyring.seal(secret),
          secretLast4: secret.slice(-4),
          previousExpiresAt: Schemas.toTimestamp(nowMs + DomainWebhooks.SECRET_OVERLAP_MS),
          now: Schemas.toTimestamp(nowMs)
        })
        if (Option.isNone(row)) return yield* endpointNotFound(id)
        return {
          id,
          secret,
          secret_last4: secret.slice(-4),
          secret_rotated_at: row.value.secret_rotated_at!,
          previous_secret_expires_at: row.value.previous_secret_expires_at!
        }
      }
    )

    const test = Effect.fn("Webhooks.test")(
      function*(
        workspaceId: string,
        id: DomainWebhooks.WebhookEndpoint["id"],
        eventType: EventCatalogue.EventType | undefined
      ) {
        yield* get(workspaceId, id)
        const type = eventType ?? "message.received"
        const result = yield* transactions.run(Effect.gen(function*() {
          const objectId = yield* Ids.newId("evt")
          const event = yield* events.append({
            workspaceId,
            event: Events.DomainEvent.test(type, {
              object: type.split(".")[0]!,
              object_id: objectId.replace(/^evt_/, "test_")
            })
          })
          const deliveryId = yield* deliveries.insert({
            endpointId: id,
            workspaceId,
            eventId: event.id,
            eventType: type,
            isTest: true,
            replayOf: null,
            now: event.created_at
          })
          return { event_id: event.id, delivery_id: deliveryId }
        }))
        yield* wake(id)
        return result
      }
    )

    const listDeliveries = Effect.fn("Webhooks.listDeliveries")(function*(workspaceId: string, query: {
      readonly limit?: number | undefined
      readonly after?: Pagination.CursorPosition | undefined
      readonly status?: DomainWebhooks.DeliveryStatus | undefined
    }, endpointId?: DomainWebhooks.WebhookEndpoint["id"]) {
      if (endpointId !== undefined) yield* get(workspaceId, endpointId)
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      return Pagination.toPage(
        yield* deliveries.list(workspaceId, { endpointId, status: query.status }, limit, query.after),
        limit,
        (d) => d
      )
    })

    const getDelivery = Effect.fn("Webhooks.getDelivery")(
      function*(workspaceId: string, id: DomainWebhooks.WebhookDelivery["id"]) {
        const found = yield* deliveries.find(workspaceId, id)
        if (Option.isNone(found)) {
          return yield* new Errors.NotFound({
            message: `No webhook delivery ${id}`,
            details: { resource: "webhook_delivery", id }
          })
        }
        return found.value
      }
    )

    const replay = Effect.fn("Webhooks.replay")(
      function*(workspaceId: string, id: DomainWebhooks.WebhookDelivery["id"]) {
        const original = yield* getDelivery(workspaceId, id)
        // a deleted endpoint is gone for good: a replay could only end `not_deliverable`
        if (Option.isNone(yield* endpoints.find(workspaceId, original.endpoint_id))) {
          return yield* new Errors.Conflict({
            message: "The delivery's webhook endpoint was deleted; it cannot be replayed",
            details: { reason: "endpoint_deleted", endpoint_id: original.endpoint_id }
          })
        }
        const result = yield* transactions.run(Effect.gen(function*() {
          const marked = yield* deliveries.markReplayed(workspaceId, id, yield* now)
          if (Option.isNone(marked)) return Option.none<{ delivery_id: `whd_${string}`; event_id: `evt_${string}` }>()
          const deliveryId = yield* deliveries.insert({
            endpointId: marked.value.endpoint_id,
            workspaceId,
            eventId: marked.value.event_id,
            eventType: marked.value.event_type,
            isTest: original.is_test,
            replayOf: id,
            now: yield* now
          })
          return Option.some({
            delivery_id: deliveryId,
            event_id: marked.value.event_id
          })
        }))
        if (Option.isNone(result)) {
          return yield* new Errors.Conflict({
            message: `Only failed or dead deliveries can be replayed; this one is ${original.status}`,
            details: { reason: "not_replayable", status: original.status }
          })
        }
        yield* wake(original.endpoint_id)
        return result.value
      }
    )

    /**
     * The catalogue in its own order (static, so a walk with `after` is stable), a page at a time;
     * a cursor naming no type of the catalogue is 422 like any malformed cursor.
     */
    const eventTypes = Effect.fn("Webhooks.eventTypes")(
      function*(query: { readonly limit?: number | undefined; readonly after?: string | undefined }) {
        const limit = query.limit ?? Pagination.DEFAULT_LIMIT
        const start = query.after === undefined
          ? 0
          : EventCatalogue.EVENT_TYPES.findIndex((e) => e.type === query.after) + 1
        if (start === 0 && query.after !== undefined) {
          return yield* new Errors.ValidationError({
            message: "Request validation failed",
            details: { issues: [{ path: ["after"], message: "Expected a cursor returned as page.next_cursor" }] }
          })
        }
        const items = EventCatalogue.EVENT_TYPES.slice(start, start + limit + 1).map((e) => ({
          type: e.type,
          emitted: EmittedEvents.isEmitted(e.type)
        }))
        return Pagination.toKeyPage(items, limit, (e) => e.type)
      }
    )

    return {
      create,
      get,
      list,
      update,
      remove,
      rotateSecret,
      test,
      listDeliveries,
      getDelivery,
      replay,
      eventTypes
    } as const
  }),
  dependencies: [
    WebhookEndpointsRepo.WebhookEndpointsRepo.Default,
    WebhookDeliveriesRepo.WebhookDeliveriesRepo.Default,
    EventsRepo.EventsRepo.Default,
    Transactions.Transactions.Default,
    Entitlements.Default
  ]
}) {}
