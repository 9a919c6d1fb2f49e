/** Plan, entitlements and usage. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Ids, Plans, Schemas } from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, requireScopes } from "./Security.js"

export class Plan extends Schema.Class<Plan>("Plan")({
  workspace_id: Ids.Id("ws"),
  plan: Plans.PlanName,
  entitlements: Schema.Record({ key: Plans.EntitlementNameSchema, value: Plans.Entitlement })
}) {}

export const UsageGauge = Schema.Struct({
  used: Schema.Number,
  limit: Schema.NullOr(Schema.Number),
  unlimited: Schema.Boolean,
  remaining: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "UsageGauge" })

export class Usage extends Schema.Class<Usage>("Usage")({
  period: Schema.Struct({ start: Schemas.Timestamp, end: Schemas.Timestamp }).annotations({
    description: "The current UTC calendar month; `end` is exclusive"
  }),
  metered: Schema.Struct({ messages_sent: UsageGauge, sandbox_messages: UsageGauge }),
  current: Schema.Struct({
    contacts: UsageGauge,
    connected_channels: UsageGauge,
    api_keys: UsageGauge,
    seats: UsageGauge,
    webhook_endpoints: UsageGauge,
    media_bytes: UsageGauge.annotations({
      description:
        "Bytes of the workspace's stored media (uploads, fetched and inbound files) kept now: grows with each stored file, falls when retention purges one; no plan limits it"
    })
  }).annotations({ description: "Live gauges, not period sums" })
}) {}

export class PlanApi extends HttpApiGroup.make("plan")
  .add(
    HttpApiEndpoint.get("plan", "/v1/plan")
      .addSuccess(Plan)
      .annotate(
        OpenApi.Description,
        "Effective entitlements with their `source` (`plan` or `override`) and whether each is enforced yet."
      )
      .pipe(requireScopes("workspace.read"))
  )
  .add(
    HttpApiEndpoint.get("usage", "/v1/usage")
      .addSuccess(Usage)
      .annotate(
        OpenApi.Description,
        "Usage for the current UTC calendar month. Takes no parameters. `webhook_endpoints.used` counts the endpoints " +
          "not deleted, as the entitlement check does. `metered.messages_sent` counts messages handed to a provider " +
          "this month; `monthly_message_quota` is judged at send on the messages accepted this month (queued ones " +
          "included), so `remaining` can read above zero while sends are refused. `contacts.used` leaves out the " +
          "contacts only WhatsApp group chats brought in (participants with no 1:1 conversation; docs/API.md " +
          "\"Contacts\"), as the limit's checks do."
      )
      .pipe(requireScopes("workspace.read"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Plan and usage")
{}
