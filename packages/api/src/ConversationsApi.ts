/**
 * Conversations (docs/API.md "Conversations"): the inbox of threads per (channel, contact), replies,
 * internal notes, assignment, close and reopen. Scopes: reading needs `messages.read`; anything
 * that changes a conversation or sends (reply, notes, PATCH, the read marker) needs
 * `messages.send` (the key scopes have no `conversations.*`).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Conversations, ConversationStateMachine, Errors, Ids, Messaging, Pagination } from "@switchboard/domain"
import { Schema } from "effect"
import * as IdempotencyKey from "./IdempotencyKey.js"
import { Authentication, rateLimited, requireScopes } from "./Security.js"
import { sendErrors } from "./SendErrors.js"

const ConversationPath = Schema.Struct({ conversationId: Ids.IdRef("cnv") })

const NOT_FOUND =
  "An unknown conversation (or one of another workspace) is 404 `NOT_FOUND` with `details.resource = conversation`."

export class ConversationsApi extends HttpApiGroup.make("conversations")
  .add(
    HttpApiEndpoint.get("list", "/v1/conversations")
      .setUrlParams(Schema.Struct({
        ...Pagination.ListParams,
        status: Schema.optional(ConversationStateMachine.ConversationStatus),
        channel_id: Schema.optional(Ids.IdRef("ch")),
        contact_id: Schema.optional(Ids.Id("cnt")),
        assignee_id: Schema.optional(Schema.Union(Ids.Id("usr"), Schema.Literal("none"))).annotations({
          description: "A user id, or `none` for unassigned conversations"
        })
      }))
      .addSuccess(Pagination.Page(Conversations.Conversation))
      .addError(Errors.ChannelNotFound)
      .annotate(
        OpenApi.Description,
        "Newest first (by creation). Each conversation carries its contact inline, `last_message_at`, `last_message` (the newest message of the thread, either direction), `last_inbound_at` and `unread_count` (inbound messages after the read marker). An unknown filter value is 422; an unknown `channel_id` is 404 `CHANNEL_NOT_FOUND`."
      )
      .pipe(requireScopes("messages.read"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/conversations/:conversationId")
      .setPath(ConversationPath)
      .addSuccess(Conversations.Conversation)
      .addError(Errors.NotFound)
      .annotate(OpenApi.Description, NOT_FOUND)
      .pipe(requireScopes("messages.read"))
  )
  .add(
    HttpApiEndpoint.patch("update", "/v1/conversations/:conversationId")
      .setPath(ConversationPath)
      .setPayload(Conversations.UpdateConversationRequest)
      .addSuccess(Conversations.Conversation)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        `Close or reopen (\`status\`) and assign (\`assignee_id\`: a user who is a member of the workspace, else 422 with \`details.reason = assignee_not_member\`; \`null\` unassigns). Each change emits exactly one event in the same transaction: \`conversation.closed\`, \`conversation.reopened\` (\`reason: request\`), \`conversation.assigned\` (\`from_assignee_id\`, \`to_assignee_id\`); a request that changes nothing emits none. ${NOT_FOUND}`
      )
      .pipe(requireScopes("messages.send"))
  )
  .add(
    HttpApiEndpoint.post("markRead", "/v1/conversations/:conversationId/read")
      .setPath(ConversationPath)
      .addSuccess(Conversations.Conversation)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        `Moves the read marker (\`last_read_at\`) forward to the contact's newest message (\`last_inbound_at\`), so \`unread_count\` is 0 until the contact writes again; never backwards. Emits \`conversation.updated\` (\`changed: ["last_read_at"]\`) when it moved; a repeated call with nothing new changes nothing and emits nothing. ${NOT_FOUND}`
      )
      .pipe(requireScopes("messages.send"))
  )
  .add(
    HttpApiEndpoint.get("messages", "/v1/conversations/:conversationId/messages")
      .setPath(ConversationPath)
      .setUrlParams(Schema.Struct(Pagination.ListParams))
      .addSuccess(Pagination.Page(Messaging.Message))
      .addError(Errors.NotFound)
      .annotate(OpenApi.Description, `The thread: messages of both directions, newest first. ${NOT_FOUND}`)
      .pipe(requireScopes("messages.read"))
  )
  .add(
    HttpApiEndpoint.post("reply", "/v1/conversations/:conversationId/messages")
      .setPath(ConversationPath)
      .setPayload(Conversations.ReplyRequest)
      .setHeaders(Schema.Struct({
        "idempotency-key": IdempotencyKey.header
      }))
      .addSuccess(Messaging.Message, { status: 201 })
      .addError(Errors.NotFound)
      .pipe(sendErrors)
      .addError(Errors.Conflict)
      .annotate(
        OpenApi.Description,
        `Replies to the conversation's contact on its channel: the body of \`POST /v1/messages\` without \`to\` and \`channel_id\`, through the same send path (checks, \`Idempotency-Key\`, 201 with status \`queued\`). Replying to a closed conversation reopens it (\`conversation.reopened\` with \`reason: outbound_message\`). ${NOT_FOUND}`
      )
      .pipe(requireScopes("messages.send"), rateLimited("conversation_reply"))
  )
  .add(
    HttpApiEndpoint.post("addNote", "/v1/conversations/:conversationId/notes")
      .setPath(ConversationPath)
      .setPayload(Conversations.CreateNoteRequest)
      .addSuccess(Conversations.ConversationNote, { status: 201 })
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        `An internal note (1..4096 characters), never sent to the contact; its author is the signed-in user or the API key. Emits \`conversation.note_added\`. ${NOT_FOUND}`
      )
      .pipe(requireScopes("messages.send"))
  )
  .add(
    HttpApiEndpoint.get("notes", "/v1/conversations/:conversationId/notes")
      .setPath(ConversationPath)
      .setUrlParams(Schema.Struct(Pagination.ListParams))
      .addSuccess(Pagination.Page(Conversations.ConversationNote))
      .addError(Errors.NotFound)
      .annotate(OpenApi.Description, `The conversation's notes, newest first. ${NOT_FOUND}`)
      .pipe(requireScopes("messages.read"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Conversations")
{}
