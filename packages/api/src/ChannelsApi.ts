/** Channels: create, list, update, archive, capabilities. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ChannelStateMachine, Characters, Errors, Ids, Messaging, Pagination, Schemas } from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, rateLimited, requireScopes } from "./Security.js"

export const CreateChannelRequest = Schemas.StrictStruct({
  provider: Schema.String.annotations({ description: "Only `qr` can be created directly" }),
  name: Schema.String.pipe(Characters.minCharacters(1), Characters.maxCharacters(64))
}).annotations({ identifier: "CreateChannelRequest" })

/** A QR channel's call policy as set (docs/QR-CHANNELS.md "Calls"). */
export const CallPolicyRequest = Schemas.StrictStruct({
  reject: Schema.Boolean.annotations({ description: "Reject every incoming call at once" }),
  reply_text: Schema.NullOr(
    Schema.String.pipe(
      Characters.minCharacters(1),
      Characters.maxCharacters(4096),
      // a text of spaces alone would go out as an empty-looking message to every caller
      Characters.visibleText()
    )
  ).annotations({
    description:
      "Sent to the caller as a normal outbound text after a rejected call (1 to 4096 characters, at least one of them visible: not only whitespace, zero-width or other invisible characters); null: none"
  })
}).annotations({ identifier: "CallPolicyRequest" })

export const UpdateChannelRequest = Schemas.StrictStruct({
  name: Schema.optional(Schema.String.pipe(Characters.minCharacters(1), Characters.maxCharacters(64))),
  is_default: Schema.optional(Schema.Literal(true)),
  call_policy: Schema.optional(CallPolicyRequest)
}).pipe(
  Schema.filter((b) =>
    b.name !== undefined || b.is_default !== undefined || b.call_policy !== undefined ||
    "Send at least one of name, is_default and call_policy"
  )
).annotations({ identifier: "UpdateChannelRequest" })

const ChannelPath = Schema.Struct({ channelId: Ids.IdRef("ch") })

export class ChannelsApi extends HttpApiGroup.make("channels")
  .add(
    HttpApiEndpoint.get("list", "/v1/channels")
      .setUrlParams(
        Schema.Struct({ ...Pagination.ListParams, status: Schema.optional(ChannelStateMachine.ChannelStatus) })
      )
      .addSuccess(Pagination.Page(Messaging.Channel))
      .pipe(requireScopes("channels.read"))
  )
  .add(
    HttpApiEndpoint.post("create", "/v1/channels")
      .setPayload(CreateChannelRequest)
      .addSuccess(Messaging.Channel, { status: 201 })
      .addError(Errors.Conflict)
      .addError(Errors.EntitlementLimitReached)
      .annotate(
        OpenApi.Description,
        "Creates a `qr` channel in status `pending` (pair it through the QR routes). `sandbox` channels come with a sandbox session; `cloud` has no adapter here: both 422. Name taken (case-insensitively, among channels not archived): 409 `CONFLICT` with `details.reason = name_taken`, answered before the plan's `production_channels` limit (409 `ENTITLEMENT_LIMIT_REACHED`). The first channel of a workspace becomes its default."
      )
      .pipe(requireScopes("channels.manage"), rateLimited("channel_create"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/channels/:channelId")
      .setPath(ChannelPath)
      .addSuccess(Messaging.Channel)
      .addError(Errors.ChannelNotFound)
      .pipe(requireScopes("channels.read"))
  )
  .add(
    HttpApiEndpoint.patch("update", "/v1/channels/:channelId")
      .setPath(ChannelPath)
      .setPayload(UpdateChannelRequest)
      .addSuccess(Messaging.Channel)
      .addError(Errors.ChannelNotFound)
      .addError(Errors.Conflict)
      .addError(Errors.ChannelCapabilityUnavailable)
      .annotate(
        OpenApi.Description,
        "Rename, make the workspace default (`is_default: true`) and/or set the call policy of a `qr` channel (`call_policy: {reject, reply_text}`: reject incoming calls at once and answer the caller with a text; docs/QR-CHANNELS.md \"Calls\"). At least one field. A call policy on a channel that is not `qr`: 409 `CHANNEL_CAPABILITY_UNAVAILABLE` with `details.reason = not_a_qr_channel`."
      )
      .pipe(requireScopes("channels.manage"))
  )
  .add(
    HttpApiEndpoint.del("archive", "/v1/channels/:channelId")
      .setPath(ChannelPath)
      .addSuccess(Messaging.Channel)
      .addError(Errors.ChannelNotFound)
      .annotate(
        OpenApi.Description,
        "Archives (not deletes); repeatable. Its undispatched messages are cancelled. `channel.archived` is emitted once."
      )
      .pipe(requireScopes("channels.manage"))
  )
  .add(
    HttpApiEndpoint.get("capabilities", "/v1/channels/:channelId/capabilities")
      .setPath(ChannelPath)
      .addSuccess(Messaging.Capabilities)
      .addError(Errors.ChannelNotFound)
      .addError(Errors.ChannelCapabilityUnavailable)
      .annotate(
        OpenApi.Description,
        "The provider's capability snapshot; 409 with `details.reason = capabilities_not_refreshed` until the provider reported one."
      )
      .pipe(requireScopes("channels.read"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Channels")
{}
