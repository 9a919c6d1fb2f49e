/** Channels: create, list, update, archive, capabilities. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import {
  Capabilities,
  Channel,
  ChannelCapabilityUnavailable,
  ChannelNotFound,
  ChannelStatus,
  Conflict,
  EntitlementLimitReached,
  IdRef,
  ListParams,
  maxCharacters,
  minCharacters,
  Page,
  StrictStruct
} from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, rateLimited, requireScopes } from "./Security.js"

export const CreateChannelRequest = StrictStruct({
  provider: Schema.String.annotations({ description: "Only `qr` can be created directly" }),
  name: Schema.String.pipe(minCharacters(1), maxCharacters(64))
}).annotations({ identifier: "CreateChannelRequest" })

export const UpdateChannelRequest = StrictStruct({
  name: Schema.optional(Schema.String.pipe(minCharacters(1), maxCharacters(64))),
  is_default: Schema.optional(Schema.Literal(true))
}).pipe(
  Schema.filter((b) => b.name !== undefined || b.is_default !== undefined || "Send at least one of name and is_default")
).annotations({ identifier: "UpdateChannelRequest" })

const ChannelPath = Schema.Struct({ channelId: IdRef("ch") })

export class ChannelsApi extends HttpApiGroup.make("channels")
  .add(
    HttpApiEndpoint.get("list", "/v1/channels")
      .setUrlParams(Schema.Struct({ ...ListParams, status: Schema.optional(ChannelStatus) }))
      .addSuccess(Page(Channel))
      .pipe(requireScopes("channels.read"))
  )
  .add(
    HttpApiEndpoint.post("create", "/v1/channels")
      .setPayload(CreateChannelRequest)
      .addSuccess(Channel, { status: 201 })
      .addError(Conflict)
      .addError(EntitlementLimitReached)
      .annotate(
        OpenApi.Description,
        "Creates a `qr` channel in status `pending` (pair it through the QR routes). `sandbox` channels come with a sandbox session; `cloud` has no adapter here: both 422. Name taken (case-insensitively, among channels not archived): 409 `CONFLICT` with `details.reason = name_taken`, answered before the plan's `production_channels` limit (409 `ENTITLEMENT_LIMIT_REACHED`). The first channel of a workspace becomes its default."
      )
      .pipe(requireScopes("channels.manage"), rateLimited("channel_create"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/channels/:channelId")
      .setPath(ChannelPath)
      .addSuccess(Channel)
      .addError(ChannelNotFound)
      .pipe(requireScopes("channels.read"))
  )
  .add(
    HttpApiEndpoint.patch("update", "/v1/channels/:channelId")
      .setPath(ChannelPath)
      .setPayload(UpdateChannelRequest)
      .addSuccess(Channel)
      .addError(ChannelNotFound)
      .addError(Conflict)
      .annotate(
        OpenApi.Description,
        "Rename and/or make the workspace default (`is_default: true`). At least one field."
      )
      .pipe(requireScopes("channels.manage"))
  )
  .add(
    HttpApiEndpoint.del("archive", "/v1/channels/:channelId")
      .setPath(ChannelPath)
      .addSuccess(Channel)
      .addError(ChannelNotFound)
      .annotate(
        OpenApi.Description,
        "Archives (not deletes); repeatable. Its undispatched messages are cancelled. `channel.archived` is emitted once."
      )
      .pipe(requireScopes("channels.manage"))
  )
  .add(
    HttpApiEndpoint.get("capabilities", "/v1/channels/:channelId/capabilities")
      .setPath(ChannelPath)
      .addSuccess(Capabilities)
      .addError(ChannelNotFound)
      .addError(ChannelCapabilityUnavailable)
      .annotate(
        OpenApi.Description,
        "The provider's capability snapshot; 409 with `details.reason = capabilities_not_refreshed` until the provider reported one."
      )
      .pipe(requireScopes("channels.read"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Channels")
{}
