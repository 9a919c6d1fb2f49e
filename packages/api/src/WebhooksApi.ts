/** Webhook endpoints and deliveries. Every route needs `webhooks.manage`. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Characters, Errors, EventCatalogue, Ids, Pagination, Schemas, Webhooks } from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, RequiredScopes } from "./Security.js"

const Url = Schema.String.pipe(Characters.maxCharacters(2048))
const EventTypes = Schema.Array(Webhooks.EventTypeSubscriptionInput).pipe(
  Schema.minItems(1, { message: () => "Subscribe to at least one event type" })
)

export const CreateEndpointRequest = Schemas.StrictStruct({
  url: Url,
  event_types: EventTypes,
  description: Schema.optional(Schema.String.pipe(Characters.maxCharacters(500)))
}).annotations({ identifier: "CreateWebhookEndpointRequest" })

export const UpdateEndpointRequest = Schemas.StrictStruct({
  url: Schema.optional(Url),
  event_types: Schema.optional(EventTypes),
  description: Schema.optional(Schema.String.pipe(Characters.maxCharacters(500))),
  status: Schema.optional(
    Schema.Literal("active", "paused").annotations({
      message: () => "Clients may set status to active or paused only"
    })
  )
}).annotations({ identifier: "UpdateWebhookEndpointRequest" })

const EndpointPath = Schema.Struct({ endpointId: Ids.IdRef("wh") })
const DeliveryPath = Schema.Struct({ deliveryId: Ids.IdRef("whd") })
const DeliveryFilters = Schema.Struct({ ...Pagination.ListParams, status: Schema.optional(Webhooks.DeliveryStatus) })

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("eventTypes", "/v1/webhook-event-types")
      .setUrlParams(Schema.Struct(Pagination.KeyListParams))
      .addSuccess(
        Pagination.Page(
          Schema.Struct({
            type: EventCatalogue.EventTypeName,
            emitted: Schema.Boolean.annotations({
              description: "Whether some code path emits this type today (every type is subscribable)"
            })
          })
        )
      )
      .annotate(
        OpenApi.Description,
        "The 31 event types and whether each is emitted today, in the list envelope, in catalogue order " +
          "(a fixed order: a walk with `after` neither repeats nor skips a type); `limit` 1..100, default 20. `emitted` comes from the " +
          "registry of emitters in the code, so a type turns true in the release whose code emits it. " +
          "`*` subscribes to all, later ones included."
      )
  )
  .add(
    HttpApiEndpoint.post("create", "/v1/webhook-endpoints")
      .setPayload(CreateEndpointRequest)
      .addSuccess(Webhooks.WebhookEndpointWithSecret, { status: 201 })
      .addError(Errors.EntitlementLimitReached)
      .annotate(
        OpenApi.Description,
        "The URL must be absolute http(s), without credentials, on port 80 or 443, and resolve only to public addresses (checked again at every delivery); refusals are 422 with `details.reason`. The `secret` (`whsec_...`) is shown in this response only."
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/webhook-endpoints").setUrlParams(Schema.Struct(Pagination.ListParams)).addSuccess(
      Pagination.Page(Webhooks.WebhookEndpoint)
    )
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/webhook-endpoints/:endpointId").setPath(EndpointPath).addSuccess(
      Webhooks.WebhookEndpoint
    )
      .addError(Errors.NotFound)
  )
  .add(
    HttpApiEndpoint.patch("update", "/v1/webhook-endpoints/:endpointId")
      .setPath(EndpointPath)
      .setPayload(UpdateEndpointRequest)
      .addSuccess(Webhooks.WebhookEndpoint)
      .addError(Errors.NotFound)
      .addError(Errors.Conflict)
      .annotate(
        OpenApi.Description,
        "`status` may be `active` or `paused`; re-activating a disabled endpoint clears its failure counter. A disabled endpoint goes back to `active` only: any other PATCH of its `status` is 409 `CONFLICT` with `details.reason = invalid_status_transition` and changes nothing. Paused endpoints keep their deliveries pending, for at most the 30-day delivery retention: older ones (by when each was made) are no longer listed, found or sent, like every delivery past its 30 days."
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/v1/webhook-endpoints/:endpointId")
      .setPath(EndpointPath)
      .addSuccess(
        Schema.Struct({ id: Ids.Id("wh"), object: Schema.Literal("webhook_endpoint"), deleted: Schema.Literal(true) })
      )
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "Deletes the endpoint; its pending deliveries end `failed` with `not_deliverable`."
      )
  )
  .add(
    HttpApiEndpoint.post("rotateSecret", "/v1/webhook-endpoints/:endpointId/rotate-secret")
      .setPath(EndpointPath)
      .addSuccess(Schema.Struct({
        id: Ids.Id("wh"),
        secret: Schema.String,
        secret_last4: Schema.String,
        secret_rotated_at: Schemas.Timestamp,
        previous_secret_expires_at: Schemas.Timestamp
      }))
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "A new secret, shown once; the previous one keeps signing for 24 h (two `v1=` entries, the new first)."
      )
  )
  .add(
    HttpApiEndpoint.post("test", "/v1/webhook-endpoints/:endpointId/test")
      .setPath(EndpointPath)
      // an empty body (read as null) is the same as `{}`, like the other action routes
      .setPayload(Schema.NullOr(Schemas.StrictStruct({ event_type: Schema.optional(EventCatalogue.EventTypeName) })))
      .addSuccess(Schema.Struct({ event_id: Ids.Id("evt"), delivery_id: Ids.Id("whd") }), { status: 202 })
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "A real delivery through the real pipeline to this endpoint only, with `\"is_test\": true` in the envelope; no message is sent to anyone."
      )
  )
  .add(
    HttpApiEndpoint.get("endpointDeliveries", "/v1/webhook-endpoints/:endpointId/deliveries")
      .setPath(EndpointPath)
      .setUrlParams(DeliveryFilters)
      .addSuccess(Pagination.Page(Webhooks.WebhookDelivery))
      .addError(Errors.NotFound)
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/v1/webhook-deliveries")
      .setUrlParams(DeliveryFilters)
      .addSuccess(Pagination.Page(Webhooks.WebhookDelivery))
      .addError(Errors.NotFound)
  )
  .add(
    HttpApiEndpoint.get("delivery", "/v1/webhook-deliveries/:deliveryId").setPath(DeliveryPath).addSuccess(
      Webhooks.WebhookDelivery
    ).addError(Errors.NotFound)
  )
  .add(
    HttpApiEndpoint.post("replay", "/v1/webhook-deliveries/:deliveryId/replay")
      .setPath(DeliveryPath)
      .addSuccess(Schema.Struct({ delivery_id: Ids.Id("whd"), event_id: Ids.Id("evt") }), { status: 202 })
      .addError(Errors.NotFound)
      .addError(Errors.Conflict)
      .annotate(
        OpenApi.Description,
        "Resends the stored envelope byte for byte with the same event id, as a new delivery (`replay_of`). Only from `failed` or `dead` (409 otherwise); a delivery whose endpoint was deleted is not replayed (409 `CONFLICT`, `details.reason = endpoint_deleted`)."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Webhooks")
  .annotateEndpoints(RequiredScopes, ["webhooks.manage"])
{}
