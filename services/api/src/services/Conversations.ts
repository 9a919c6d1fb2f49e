/**
 * Conversations (docs/API.md "Conversations"): the inbox reads, updates with exactly one event per
 * change in the same transaction, the read marker, replies through the send path, and notes.
 */
import type { Security } from "@switchboard/api"
import {
  ChannelsRepo,
  ConversationNotesRepo,
  ConversationsRepo,
  EventsRepo,
  MessagesRepo,
  RetentionSettings,
  Transactions,
  UsersRepo
} from "@switchboard/db"
import {
  Conversations as DomainConversations,
  ConversationStateMachine,
  Errors,
  Events,
  Ids,
  LidAddress,
  Pagination,
  Schemas
} from "@switchboard/domain"
import { ChannelProtocol } from "@switchboard/entities/protocol"
import { Clock, Effect, Option } from "effect"
import { Messages } from "./Messages.js"

interface ListQuery {
  readonly limit?: number | undefined
  readonly after?: Pagination.CursorPosition | undefined
}

const notFound = (id: string) =>
  new Errors.NotFound({ message: `No conversation ${id}`, details: { resource: "conversation", id } })

/** The event reporting one change of `conversation` (the state after the change). */
const changeEvent = (
  conversation: DomainConversations.Conversation,
  change: ConversationStateMachine.ConversationChange
): Events.DomainEvent => {
  const fields = DomainConversations.conversationEventFields(conversation)
  switch (change.type) {
    case "conversation.closed":
      return Events.DomainEvent.make("conversation.closed", fields)
    case "conversation.reopened":
      return Events.DomainEvent.make("conversation.reopened", { ...fields, reason: change.reason })
    case "conversation.assigned":
      return Events.DomainEvent.make("conversation.assigned", {
        ...fields,
        assignee_id: change.to,
        from_assignee_id: change.from,
        to_assignee_id: change.to
      })
  }
}

export class Conversations extends Effect.Service<Conversations>()("@switchboard/service-api/Conversations", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const retention = yield* RetentionSettings.RetentionSettings
    const conversations = yield* ConversationsRepo.ConversationsRepo
    const notes = yield* ConversationNotesRepo.ConversationNotesRepo
    const messages = yield* MessagesRepo.MessagesRepo
    const channels = yield* ChannelsRepo.ChannelsRepo
    const users = yield* UsersRepo.UsersRepo
    const events = yield* EventsRepo.EventsRepo
    const sends = yield* Messages
    const channelClient = yield* ChannelProtocol.ChannelEntity.client
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

    const get = Effect.fn("Conversations.get")(function*(workspaceId: string, id: string) {
      const found = yield* conversations.find(workspaceId, id)
      if (Option.isNone(found)) return yield* notFound(id)
      return found.value
    })

    const list = Effect.fn("Conversations.list")(function*(
      workspaceId: string,
      query: ListQuery & {
        readonly status?: ConversationStateMachine.ConversationStatus | undefined
        readonly channel_id?: string | undefined
        readonly contact_id?: string | undefined
        readonly assignee_id?: string | undefined
      }
    ) {
      if (query.channel_id !== undefined && Option.isNone(yield* channels.find(workspaceId, query.channel_id))) {
        return yield* new Errors.ChannelNotFound({
          message: `No channel ${query.channel_id} in this workspace`,
          details: { resource: "channel", id: query.channel_id }
        })
      }
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      const rows = yield* conversations.list(
        workspaceId,
        {
          status: query.status,
          channelId: query.channel_id,
          contactId: query.contact_id,
          assigneeId: query.assignee_id === "none" ? null : query.assignee_id
        },
        limit,
        query.after
      )
      return Pagination.toPage(rows, limit, (c) => c)
    })

    const update = Effect.fn("Conversations.update")(function*(
      workspaceId: string,
      id: string,
      body: {
        readonly status?: ConversationStateMachine.ConversationStatus | undefined
        readonly assignee_id?: string | null | undefined
      }
    ) {
      if (
        body.assignee_id !== undefined && body.assignee_id !== null &&
        Option.isNone(yield* users.membership(body.assignee_id, workspaceId))
      ) {
        return yield* new Errors.ValidationError({
          message: "The assignee is not a member of this workspace",
          details: {
            reason: "assignee_not_member",
            issues: [{ path: ["assignee_id"], message: "Expected a member of this workspace, or null" }]
          }
        })
      }
      const at = yield* now
      return yield* transactions.run(Effect.gen(function*() {
        const updated = yield* conversations.update(
          workspaceId,
          id,
          { status: body.status, assigneeId: body.assignee_id },
          at
        )
        if (Option.isNone(updated)) return yield* notFound(id)
        const { after, before } = updated.value
        for (
          const change of ConversationStateMachine.updateChanges(before, {
            status: after.status,
            assigneeId: after.assignee_id
          })
        ) {
          yield* events.append({ workspaceId, event: changeEvent(after, change), occurredAt: at })
        }
        return after
      }))
    })

    /**
     * Moves the read marker (to the newest inbound message, or up to `upTo`) and marks the
     * inbound messages up to it read, in one transaction; after commit, the channel sends their
     * read receipts (blue ticks). A repeated call finds nothing unread and sends nothing.
     */
    const moveReadMarker = (workspaceId: string, id: string, upTo: string | undefined) =>
      Effect.gen(function*() {
        const at = yield* now
        const { conversation, read } = yield* transactions.run(Effect.gen(function*() {
          const updated = yield* conversations.update(workspaceId, id, { markRead: true, readUpTo: upTo }, at)
          if (Option.isNone(updated)) return yield* notFound(id)
          const { after, before } = updated.value
          if (after.last_read_at !== before.lastReadAt) {
            yield* events.append({
              workspaceId,
              event: Events.DomainEvent.make("conversation.updated", {
                ...DomainConversations.conversationEventFields(after),
                changed: ["last_read_at"]
              }),
              occurredAt: at
            })
          }
          const read = yield* messages.markInboundRead({ conversationId: id, upTo: upTo ?? null, now: at })
          return { conversation: after, read }
        }))
        const receipts = read.flatMap((m) =>
          m.provider_message_id === null ? [] : [{
            provider_message_id: m.provider_message_id,
            phone_number: m.from_number,
            whatsapp_lid: m.sender_lid,
            ...(m.whatsapp_group_id === null ? {} : { whatsapp_group_id: m.whatsapp_group_id })
          }]
        )
        if (receipts.length > 0) {
          // after commit: a receipt the channel cannot send now (no link) is not retried; the
          // marker and `read_at` stand either way
          yield* channelClient(conversation.channel_id).MarkRead({ messages: receipts }).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("read receipts not sent", cause)),
            Effect.forkDaemon
          )
        }
        return conversation
      })

    const markRead = Effect.fn("Conversations.markRead")(function*(workspaceId: string, id: string) {
      return yield* moveReadMarker(workspaceId, id, undefined)
    })

    /** `POST /v1/messages/{id}/read`: an inbound message and every unread one before it in its conversation. */
    const markMessageRead = Effect.fn("Conversations.markMessageRead")(
      function*(workspaceId: string, messageId: string) {
        const found = yield* messages.find(workspaceId, messageId)
        if (Option.isNone(found)) {
          return yield* new Errors.NotFound({
            message: `No message ${messageId}`,
            details: { resource: "message", id: messageId }
          })
        }
        if (found.value.direction === "outbound") {
          return yield* new Errors.Conflict({
            message: "Only inbound messages can be marked read",
            details: { reason: "outbound_message" }
          })
        }
        yield* moveReadMarker(workspaceId, found.value.conversation_id, found.value.created_at)
        return Option.getOrThrow(yield* messages.find(workspaceId, messageId))
      }
    )

    const thread = Effect.fn("Conversations.thread")(function*(workspaceId: string, id: string, query: ListQuery) {
      yield* get(workspaceId, id)
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      const rows = yield* messages.list(
        workspaceId,
        { conversationId: id, ids: (yield* RetentionSettings.keptMessages(retention))?.ids },
        limit,
        query.after
      )
      return Pagination.toPage(rows, limit, (m) => m)
    })

    /**
     * Where a reply goes: the contact's number; for a contact WhatsApp named by LID alone
     * (docs/API.md "Contacts"), its LID on a QR channel (WhatsApp's own address for it); 409 on a
     * channel that cannot address a LID (the sandbox: its senders always have a number).
     */
    const recipientOf = (
      workspaceId: string,
      conversation: DomainConversations.Conversation,
      contact: NonNullable<DomainConversations.Conversation["contact"]>
    ) =>
      Effect.gen(function*() {
        if (contact.phone_number !== null) return contact.phone_number
        const channel = yield* channels.find(workspaceId, conversation.channel_id)
        if (contact.whatsapp_lid !== null && Option.exists(channel, (c) => c.channel.provider === "qr")) {
          return LidAddress.lidAddress(contact.whatsapp_lid)
        }
        return yield* new Errors.Conflict({
          message:
            "This conversation's contact has no phone number yet, and only a QR channel can reply to its WhatsApp LID; a reply can go out once WhatsApp reveals the number",
          details: { reason: "contact_without_phone_number" }
        })
      })

    /** A send to the conversation's contact on its channel: the send path, idempotency included. */
    const reply = Effect.fn("Conversations.reply")(function*(
      principal: Security.Principal,
      id: string,
      body: typeof DomainConversations.ReplyRequest.Type,
      idempotencyKey: string | undefined
    ) {
      const conversation = yield* get(principal.workspaceId, id)
      // fingerprint: the key is bound to the reply as sent (and its conversation), not to the send it becomes
      const fingerprint = { fingerprint: { conversation_id: id, ...body } }
      if (conversation.group_chat_id !== undefined) {
        // a group chat's conversation: the reply goes to the group chat (docs/API.md "Group chats")
        return yield* sends.send(
          principal,
          { ...body, group_chat_id: conversation.group_chat_id, channel_id: conversation.channel_id },
          idempotencyKey,
          fingerprint
        )
      }
      if (conversation.contact === null) {
        // a send to the number would make a new contact, and so a new conversation: say so instead
        return yield* new Errors.Conflict({
          message: "This conversation's contact was deleted; send to the number with POST /v1/messages",
          details: { reason: "contact_deleted" }
        })
      }
      const to = yield* recipientOf(principal.workspaceId, conversation, conversation.contact)
      return yield* sends.send(
        principal,
        { ...body, to, channel_id: conversation.channel_id },
        idempotencyKey,
        fingerprint
      )
    })

    const addNote = Effect.fn("Conversations.addNote")(
      function*(principal: Security.Principal, id: string, body: { readonly body: string }) {
        const workspaceId = principal.workspaceId
        const at = yield* now
        const author = principal.kind === "user"
          ? { type: "user" as const, id: principal.userId! }
          : { type: "api_key" as const, id: principal.apiKeyId! }
        return yield* transactions.run(Effect.gen(function*() {
          const conversation = yield* get(workspaceId, id)
          const note = yield* notes.insert({
            id: yield* Ids.newId("nte"),
            workspaceId,
            conversationId: id,
            body: body.body,
            authorType: author.type,
            authorId: author.id,
            now: at
          })
          yield* events.append({
            workspaceId,
            event: Events.DomainEvent.make("conversation.note_added", {
              ...DomainConversations.conversationEventFields(conversation),
              note_id: note.id,
              author_type: author.type,
              author_id: author.id
            }),
            occurredAt: at
          })
          return note
        }))
      }
    )

    const listNotes = Effect.fn("Conversations.listNotes")(
      function*(workspaceId: string, id: string, query: ListQuery) {
        yield* get(workspaceId, id)
        const limit = query.limit ?? Pagination.DEFAULT_LIMIT
        return Pagination.toPage(yield* notes.list(id, limit, query.after), limit, (n) => n)
      }
    )

    return { list, get, update, markRead, markMessageRead, thread, reply, addNote, listNotes } as const
  }),
  dependencies: [
    Transactions.Transactions.Default,
    ConversationsRepo.ConversationsRepo.Default,
    ConversationNotesRepo.ConversationNotesRepo.Default,
    MessagesRepo.MessagesRepo.Default,
    ChannelsRepo.ChannelsRepo.Default,
    UsersRepo.UsersRepo.Default,
    EventsRepo.EventsRepo.Default,
    Messages.Default
  ]
}) {}
