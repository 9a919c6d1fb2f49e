/** Webhook endpoints and deliveries. Every route needs `webhooks.manage`. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import {
  Conflict,
  DeliveryStatus,
  EntitlementLimitReached,
  EventTypeName,
  EventTypeSubscriptionInput,
  Id,
  IdRef,
  KeyListParams,
  ListParams,
  maxCharacters,
  NotFound,
  Page,
  StrictStruct,
  Timestamp,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret
} from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, RequiredScopes } from "./Security.js"

const Url = Schema.String.pipe(maxCharacters(2048))
const EventTypes = Schema.Array(EventTypeSubscriptionInput).pipe(
  Schema.minItems(1, { message: () => "Subscribe to at least one event type" })
)

export const CreateEndpointRequest = StrictStruct({
  url: Url,
  event_types: EventTypes,
  description: Schema.optional(Schema.String.pipe(maxCharacters(500)))
}).annotations({ identifier: "CreateWebhookEndpointRequest" })

export const UpdateEndpointRequest = StrictStruct({
  url: Schema.optional(Url),
  event_types: Schema.optional(EventTypes),
  description: Schema.optional(Schema.String.pipe(maxCharacters(500))),
  status: Schema.optional(
    Schema.Literal("active", "paused").annotations({
      message: () => "Clients may set status to active or paused only"
    })
  )
}).annotations({ identifier: "UpdateWebhookEndpointRequest" })

const EndpointPath = Schema.Struct({ endpointId: IdRef("wh") })
const DeliveryPath = Schema.Struct({ deliveryId: IdRef("whd") })
const DeliveryFilters = Schema.Struct({ ...ListParams, status: Schema.optional(DeliveryStatus) })

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("eventTypes", "/v1/webhook-event-types")
      .setUrlParams(Schema.Struct(KeyListParams))
      .addSuccess(
        Page(
          Schema.Struct({
            type: EventTypeName,
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
      .addSuccess(WebhookEndpointWithSecret, { status: 201 })
      .addError(EntitlementLimitReached)
      .annotate(
        OpenApi.Description,
        "The URL must be absolute http(s), without credentials, on port 80 or 443, and resolve only to public addresses (checked again at every delivery); refusals are 422 with `details.reason`. The `secret` (`whsec_...`) is shown in this response only."
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/webhook-endpoints").setUrlParams(Schema.Struct(ListParams)).addSuccess(
      Page(WebhookEndpoint)
    )
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/webhook-endpoints/:endpointId").setPath(EndpointPath).addSuccess(WebhookEndpoint)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.patch("update", "/v1/webhook-endpoints/:endpointId")
      .setPath(EndpointPath)
      .setPayload(UpdateEndpointRequest)
      .addSuccess(WebhookEndpoint)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(
        OpenApi.Description,
        "`status` may be `active` or `paused`; re-activating a disabled endpoint clears its failure counter. A disabled endpoint goes back to `active` only: any other PATCH of its `status` is 409 `CONFLICT` with `details.reason = invalid_status_transition` and changes nothing. Paused endpoints keep their deliveries pending, for at most the 30-day delivery retention: older ones are purged like every delivery."
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/v1/webhook-endpoints/:endpointId")
      .setPath(EndpointPath)
      .addSuccess(
        Schema.Struct({ id: Id("wh"), object: Schema.Literal("webhook_endpoint"), deleted: Schema.Literal(true) })
      )
      .addError(NotFound)
      .annotate(
        OpenApi.Description,
        "Deletes the endpoint; its pending deliveries end `failed` with `not_deliverable`."
      )
  )
  .add(
    HttpApiEndpoint.post("rotateSecret", "/v1/webhook-endpoints/:endpointId/rotate-secret")
      .setPath(EndpointPath)
      .addSuccess(Schema.Struct({
        id: Id("wh"),
        secret: Schema.String,
        secret_last4: Schema.String,
        secret_rotated_at: Timestamp,
        previous_secret_expires_at: Timestamp
      }))
      .addError(NotFound)
      .annotate(
        OpenApi.Description,
        "A new secret, shown once; the previous one keeps signing for 24 h (two `v1=` entries, the new first)."
      )
  )
  .add(
    HttpApiEndpoint.post("test", "/v1/webhook-endpoints/:endpointId/test")
      .setPath(EndpointPath)
      // an empty body (read as null) is the same as `{}`, like the other action routes
      .setPayload(Schema.NullOr(StrictStruct({ event_type: Schema.optional(EventTypeName) })))
      .addSuccess(Schema.Struct({ event_id: Id("evt"), delivery_id: Id("whd") }), { status: 202 })
      .addError(NotFound)
      .annotate(
        OpenApi.Description,
        "A real delivery through the real pipeline to this endpoint only, with `\"is_test\": true` in the envelope; no message is sent to anyone."
      )
  )
  .add(
    HttpApiEndpoint.get("endpointDeliveries", "/v1/webhook-endpoints/:endpointId/deliveries")
      .setPath(EndpointPath)
      .setUrlParams(DeliveryFilters)
      .addSuccess(Page(WebhookDelivery))
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/v1/webhook-deliveries")
      .setUrlParams(DeliveryFilters)
      .addSuccess(Page(WebhookDelivery))
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.get("delivery", "/v1/webhook-deliveries/:deliveryId").setPath(DeliveryPath).addSuccess(
      WebhookDelivery
    ).addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("replay", "/v1/webhook-deliveries/:deliveryId/replay")
      .setPath(DeliveryPath)
      .addSuccess(Schema.Struct({ delivery_id: Id("whd"), event_id: Id("evt") }), { status: 202 })
      .addError(NotFound)
      .addError(Conflict)
      .annotate(
        OpenApi.Description,
        "Resends the stored envelope byte for byte with the same event id, as a new delivery (`replay_of`). Only from `failed` or `dead` (409 otherwise); a delivery whose endpoint was deleted is not replayed (409 `CONFLICT`, `details.reason = endpoint_deleted`)."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Webhooks")
  .annotateEndpoints(RequiredScopes, ["webhooks.manage"])
{}
