/** The sandbox: sessions on the shared number and simulated inbound messages. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Characters, Errors, GroupChats, Ids, Pagination, SandboxInbound, Schemas } from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, rateLimited, requireScopes, testKeyOnly } from "./Security.js"

export const SandboxSessionStatus = Schema.Literal("active", "revoked", "expired").annotations({
  identifier: "SandboxSessionStatus"
})

export class SandboxSession extends Schema.Class<SandboxSession>("SandboxSession")({
  id: Ids.Id("sbx"),
  object: Schema.Literal("sandbox_session"),
  channel_id: Ids.Id("ch"),
  phone_number: Schema.String,
  status: SandboxSessionStatus,
  verified_recipients: Schema.Array(Schema.String),
  expires_at: Schemas.Timestamp,
  created_at: Schemas.Timestamp
}) {}

export class CreatedSandboxSession extends Schema.Class<CreatedSandboxSession>("CreatedSandboxSession")({
  ...SandboxSession.fields,
  verification: Schema.Struct({
    code: Schema.String.annotations({ description: "6 digits; shown in this response only" }),
    instructions: Schema.String
  })
}) {}

const SessionPath = Schema.Struct({ sessionId: Ids.IdRef("sbx") })

/** What `inbound` answers: the message the simulated network delivered, as recorded, and its conversation. */
export class SandboxInboundAccepted extends Schema.Class<SandboxInboundAccepted>("SandboxInboundAccepted")({
  object: Schema.Literal("sandbox_inbound"),
  message_id: Ids.Id("msg").annotations({
    description: "The inbound message recorded: `GET /v1/messages/{message_id}` (a file's `media` follows once stored)"
  }),
  conversation_id: Ids.Id("cnv").annotations({
    description: "Its conversation: `GET /v1/conversations/{conversation_id}`, reply with `POST .../reply`"
  })
}) {}

export class SandboxApi extends HttpApiGroup.make("sandbox")
  .add(
    HttpApiEndpoint.post("create", "/v1/sandbox/sessions")
      .addSuccess(CreatedSandboxSession, { status: 201 })
      .addError(Errors.SandboxTestKeyRequired)
      .pipe(testKeyOnly)
      .addError(Errors.EntitlementLimitReached)
      .addError(Errors.SandboxNoNumberAvailable)
      .annotate(
        OpenApi.Description,
        "Reserves a shared test number for 72 h and creates its `sandbox` channel (connected). The verification code is in this response only. Test-mode API keys only. At `expires_at` the session reads `expired` and stops verifying, receiving and sending; within seconds its channel is archived (`channel.archived`) and the number returns to the pool (an allocation takes the number of an expired session at once). A workspace holds at most `shared_test_sessions` sessions and never more than half of the shared pool (`unlimited` means half of the pool; an operator's numeric override is honoured as given): beyond, 409 `ENTITLEMENT_LIMIT_REACHED` (`details.reason = pool_share` when the pool's share refused it). Every number held: 503 `SANDBOX_NO_NUMBER_AVAILABLE` with `details.retry_at` (when the first number frees up), `details.retry_after_seconds` and `Retry-After` (docs/LIMITS.md \"Sandbox numbers\")."
      )
      .pipe(requireScopes("channels.manage"), rateLimited("sandbox_session_create"))
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/sandbox/sessions")
      .setUrlParams(Schema.Struct({ ...Pagination.ListParams, status: Schema.optional(SandboxSessionStatus) }))
      .addSuccess(Pagination.Page(SandboxSession))
      .addError(Errors.SandboxTestKeyRequired)
      .pipe(testKeyOnly)
      .annotate(
        OpenApi.Description,
        "The workspace's sandbox sessions, newest first; `status=active` finds the one a plan allows (to reuse it, or end it with `DELETE` before creating another). A session past `expires_at` reads `expired` at once. Verification codes are never listed."
      )
      .pipe(requireScopes("channels.read"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/sandbox/sessions/:sessionId")
      .setPath(SessionPath)
      .addSuccess(SandboxSession)
      .addError(Errors.SandboxTestKeyRequired)
      .pipe(testKeyOnly)
      .addError(Errors.NotFound)
      .pipe(requireScopes("channels.read"))
  )
  .add(
    HttpApiEndpoint.post("verify", "/v1/sandbox/sessions/:sessionId/verify")
      .setPath(SessionPath)
      .setPayload(
        Schemas.StrictStruct({ phone_number: Schemas.E164, code: Schema.String.pipe(Characters.maxCharacters(16)) })
      )
      .addSuccess(SandboxSession)
      .addError(Errors.SandboxTestKeyRequired)
      .pipe(testKeyOnly)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "Verifies a recipient with the session's code; wrong code: 422 with `details.reason = invalid_code` and `details.attempts_remaining`. After 5 wrong codes the session's verification is locked for good, whatever the rate limits: every later attempt, the right code included, is 422 with `details.reason = verification_locked` (create a new session)."
      )
      .pipe(requireScopes("channels.manage"), rateLimited("sandbox_verify"))
  )
  .add(
    HttpApiEndpoint.del("revoke", "/v1/sandbox/sessions/:sessionId")
      .setPath(SessionPath)
      .addSuccess(SandboxSession)
      .addError(Errors.SandboxTestKeyRequired)
      .pipe(testKeyOnly)
      .addError(Errors.NotFound)
      .annotate(OpenApi.Description, "Ends the session: the number returns to the pool and the channel is archived.")
      .pipe(requireScopes("channels.manage"))
  )
  .add(
    HttpApiEndpoint.post("inbound", "/v1/sandbox/sessions/:sessionId/inbound")
      .setPath(SessionPath)
      .setPayload(SandboxInbound.SandboxInboundRequest)
      .addSuccess(SandboxInboundAccepted, { status: 202 })
      .addError(Errors.SandboxTestKeyRequired)
      .pipe(testKeyOnly)
      .addError(Errors.NotFound)
      .addError(Errors.PayloadTooLarge)
      .addError(Errors.ServiceUnavailable)
      .annotate(
        OpenApi.Description,
        "The simulated network delivers an inbound message from a verified recipient, of any kind (docs/API.md \"Messages\"): exactly one of `text`, `image`, `document`, `audio`, `video`, `sticker`, `location`, `contacts`, `reaction`, `edit`, `revoke`, `unsupported`, optionally quoting a message of the session's channel (`reply_to`). A file is given inline (`{data_base64, mime_type, filename?}`, at most 1 MiB decoded; over it, or over the kind's limit, 413 `PAYLOAD_TOO_LARGE` with `details.limit_bytes`) or as a stored media of the workspace (`{media_id}`; unknown: 404); a media type the kind does not take is 422. `reaction`, `edit` and `revoke` name a message of the session's channel (another is 422 with `details.reason = message_not_in_session`). The message is recorded at once: 202 answers its id (`message_id`) and its conversation's (`conversation_id`), so a client follows it with `GET /v1/messages/{message_id}`; `message.received` follows (for a file, once its bytes are stored). `audio` and `sticker` take no `caption` (WhatsApp's have none): 422 as an unknown member. With `group_chat_id` (a group chat the session simulates, `POST /v1/sandbox/sessions/{id}/group-chats`) the sender writes in that group chat as a participant, optionally mentioning others (`mentions`): recorded in the group chat's conversation (docs/API.md \"Group chats\"); a sender who is not a participant is 422 `not_a_participant`, a member writing in an announce-only group chat 422 `group_chat_announce_only`."
      )
      .pipe(requireScopes("messages.send"))
  )
  .add(
    HttpApiEndpoint.post("createGroupChat", "/v1/sandbox/sessions/:sessionId/group-chats")
      .setPath(SessionPath)
      .setPayload(SandboxInbound.SandboxGroupChatRequest)
      .addSuccess(GroupChats.GroupChatDetail, { status: 201 })
      .addError(Errors.SandboxTestKeyRequired)
      .pipe(testKeyOnly)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "The simulated network makes a group chat (docs/API.md \"Group chats\") the session's number is in, with verified recipients (or magic numbers) as its other participants (the first one created it: `superadmin`; `admins` are admins); `is_admin` makes the session's number an admin, `announce_only` lets only admins write. It is listed with the channel's group chats; participants write in it through `POST /v1/sandbox/sessions/{id}/inbound` with `group_chat_id`, and `POST /v1/messages` with `group_chat_id` sends to it. An unverified participant: 422 with `details.reason = recipient_not_verified`."
      )
      .pipe(requireScopes("channels.manage"))
  )
  .add(
    HttpApiEndpoint.del("removeFromGroupChat", "/v1/sandbox/sessions/:sessionId/group-chats/:groupChatId")
      .setPath(Schema.Struct({ sessionId: Ids.IdRef("sbx"), groupChatId: Ids.IdRef("gch") }))
      .addSuccess(GroupChats.GroupChatDetail)
      .addError(Errors.SandboxTestKeyRequired)
      .pipe(testKeyOnly)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "The simulated group chat's admins remove the session's number: the group chat is kept with `is_participant: false` (its history stays), and sends to it are refused (409 `not_a_participant`)."
      )
      .pipe(requireScopes("channels.manage"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Sandbox")
{}
