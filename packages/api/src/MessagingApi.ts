/** Messages: send, read, cancel, mark read (one group; channels and the sandbox have files of their own). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Errors, Ids, MessageCategory, MessageStateMachine, Messaging, Pagination } from "@switchboard/domain"
import { Schema } from "effect"
import * as IdempotencyKey from "./IdempotencyKey.js"
import { Authentication, rateLimited, requireScopes } from "./Security.js"
import { sendErrors } from "./SendErrors.js"

export class MessagingApi extends HttpApiGroup.make("messages")
  .add(
    HttpApiEndpoint.post("send", "/v1/messages")
      .setPayload(Messaging.SendMessageRequest)
      .setHeaders(Schema.Struct({
        "idempotency-key": IdempotencyKey.header
      }))
      .addSuccess(Messaging.Message, { status: 201 })
      .pipe(sendErrors)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "Accepts a message at once (201, status `queued`); the channel dispatches it at the provider's pace in priority order (authentication > utility > marketing). `Idempotency-Key` (<= 255 characters, kept 24 h): the same body replays the original response with `Idempotent-Replay: true`; another body is 409 `IDEMPOTENCY_CONFLICT`; while the first request still runs, 409 with `details.reason = in_progress`. No `channel_id` and no default channel: 422 with `details.reason = channel_required`. Sandbox channels need a test-mode key and a verified recipient (`details.reason = recipient_not_verified`). A template send (`template: {slug, variables}`) renders the template once (a `{{` inside a value stays as it is) and stores `type: \"template\"`, the rendered `text.body`, `template: {id, slug, variables}` and the template's category unless `category` is given; unknown slug 404 `TEMPLATE_NOT_FOUND` (the slug is not repeated), archived 409 `TEMPLATE_NOT_SENDABLE`, missing required variables 422 `TEMPLATE_VARIABLE_MISSING` (`details.missing` lists all), unknown variables (reported at `template.variables`, never by name; the message lists the names the template declares), empty values, values or a rendered text over 1 024 characters 422 `VALIDATION_ERROR`; values the channel's provider refuses, 422 with `details.reason = provider_value_rules`. Only a `connected` channel takes sends: every other status (`degraded` included: its link is lost and reconnecting, nothing can be handed to the provider) is 409 `CHANNEL_NOT_CONNECTED` with `details.status`; a sandbox channel whose session has expired (72 h) or was revoked is 409 `CHANNEL_NOT_CONNECTED` with `details.reason = sandbox_session_ended`, even before the channel is archived. A channel whose provider's capabilities (`message_types` of `GET /v1/channels/{id}/capabilities`) lack the message's type is 409 `CHANNEL_CAPABILITY_UNAVAILABLE` with `details.reason = message_type_unsupported` and `details.type` (a template is handed to the provider as `text`). `monthly_message_quota`, when the plan or an override sets a number: at most that many outbound messages on non-sandbox channels are accepted per UTC calendar month (counted when accepted, whatever becomes of them; concurrent sends are judged one after the other), then 409 `ENTITLEMENT_LIMIT_REACHED` with `details.entitlement = monthly_message_quota`, `details.limit`, `details.used`; sandbox messages do not count. A backlog over 24 h of the channel's throughput: 429 `PROVIDER_RATE_LIMITED` (a message the provider throttles later waits for the channel's pause without spending an attempt, its timeline showing `failed_retryable` with `failure.code = PROVIDER_RATE_LIMITED`; throttled for an hour with no send taken, it fails with `failure.code = provider_throttled`). A QR channel whose messages sent in the last 24 h plus those still queued reach its safety cap (200, lowered per workspace or channel by operators): 429 `QR_SAFETY_LIMIT_REACHED` with `details.reason = daily_cap`, `details.limit`, `details.retry_at` and `Retry-After` (seconds). A QR channel warming up (the first 14 days after its number was linked): a send to a new contact (a recipient who never wrote to the channel) beyond the day's warm-up cap (20 on day 1, up to 200 on day 14) is 429 `QR_SAFETY_LIMIT_REACHED` with `details.reason = warm_up`, `details.limit`, `details.warm_up_day`, `details.retry_at` and `Retry-After`; replies to contacts who wrote first are not warm-up sends (docs/LIMITS.md, \"Number protection\"). While WhatsApp holds a reach-out timelock on a QR number, or reported its new-chat quota used up, a send to a new contact is 429 `QR_SAFETY_LIMIT_REACHED` with `details.reason` `timelock` or `new_chat_cap` and `details.retry_at`; messages to new contacts already queued when a timelock starts stay `queued` until it ends. On a QR channel a message WhatsApp refuses ends `failed_permanent` with `failure.code` `account_restricted` (error 463, never retried) or `provider_rejected`, one to a number not on WhatsApp with `not_on_whatsapp`, one never acknowledged within 15 minutes with `provider_ack_timeout`. `group_chat_id` instead of `to` (exactly one of the two, else 422) sends to a group chat of a QR channel or a sandbox (docs/API.md \"Group chats\"), every kind, `reply_to` a message of that group chat: `channel_id` may be left out (another channel than the group chat's is 422 with `details.reason = group_chat_of_another_channel`); an unknown group chat is 404; one where only admins write and the channel's number is not one is 409 `CHANNEL_CAPABILITY_UNAVAILABLE` with `details.reason = group_chat_announce_only`, one the number left or was removed from the same with `not_a_participant`. The message has `group_chat_id`, `contact_id: null` and `to: \"<whatsapp_group_id>@g.us\"`, lands in the group chat's conversation, counts once against the QR safety cap and the per-recipient pacing (the group chat is the recipient) and never as a new-contact send; it is `delivered` and `read` when the first participant's receipt arrives."
      )
      .pipe(requireScopes("messages.send"), rateLimited("send"))
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/messages")
      .setUrlParams(Schema.Struct({
        ...Pagination.ListParams,
        status: Schema.optional(MessageStateMachine.MessageStatus),
        state: Schema.optional(MessageStateMachine.MessageStatus),
        direction: Schema.optional(Schema.Literal("outbound", "inbound")),
        category: Schema.optional(MessageCategory.Category),
        channel_id: Schema.optional(Ids.IdRef("ch"))
      }))
      .addSuccess(Pagination.Page(Messaging.Message))
      .addError(Errors.ChannelNotFound)
      .annotate(
        OpenApi.Description,
        "Newest first. `state` is an alias of `status`. An unknown filter value is 422; an unknown `channel_id` is 404."
      )
      .pipe(requireScopes("messages.read"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/messages/:messageId")
      .setPath(Schema.Struct({ messageId: Ids.IdRef("msg") }))
      .addSuccess(Messaging.MessageWithTimeline)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "The message with its timeline (every transition, oldest first). With a message retention set (`MESSAGE_RETENTION_DAYS`), a message made longer ago than that is 404 `NOT_FOUND` with `details.reason = past_retention` and `details.retention_days`, whether or not its rows are gone yet; lists leave such messages out. Without one, messages are kept for good."
      )
      .pipe(requireScopes("messages.read"))
  )
  .add(
    HttpApiEndpoint.post("markRead", "/v1/messages/:messageId/read")
      .setPath(Schema.Struct({ messageId: Ids.IdRef("msg") }))
      .addSuccess(Messaging.MessageWithTimeline)
      .addError(Errors.NotFound)
      .addError(Errors.Conflict)
      .annotate(
        OpenApi.Description,
        "Marks an inbound message read, with every unread inbound message before it in its conversation: each gets `read_at`, the conversation's read marker (`last_read_at`) moves up to it (never backwards), and the channel sends WhatsApp's read receipts (blue ticks) for them once the change is committed (a channel without a link at that moment does not send them later). Idempotent: a repeated call finds nothing unread and sends nothing. An outbound message is 409 `CONFLICT` with `details.reason = outbound_message`. Answers the message."
      )
      .pipe(requireScopes("messages.send"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Messages")
{}
