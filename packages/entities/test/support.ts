/** Rows for entity tests: a workspace, a channel, queued messages, written as the api node would. */
import { SqlClient } from "@effect/sql"
import {
  ChannelsRepo,
  ContactsRepo,
  ConversationsRepo,
  DispatchQueueRepo,
  MessagesRepo,
  QrRecipientChecksRepo,
  Transactions
} from "@switchboard/db"
import {
  type ChannelStateMachine,
  Ids,
  MessageCategory,
  type MessageStateMachine,
  Messaging,
  Schemas
} from "@switchboard/domain"
import { GroupChatsSync, InboundCalls, InboundMessages } from "@switchboard/entities"
import type { ChannelProvider } from "@switchboard/providers"
import { Clock, Effect, Layer, Option, Stream } from "effect"

/** The repositories the Channel and Message entities need (on `TestDatabase.sqlLayer`). */
export const EntityRepos = Layer.mergeAll(
  ChannelsRepo.ChannelsRepo.Default,
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  DispatchQueueRepo.DispatchQueueRepo.Default,
  InboundMessages.InboundMessages.Default,
  InboundCalls.InboundCalls.Default,
  GroupChatsSync.GroupChatsSync.Default,
  QrRecipientChecksRepo.QrRecipientChecksRepo.Default,
  Transactions.Transactions.Default
)

export const setupChannel = (
  options: {
    readonly provider?: Messaging.Provider
    readonly status?: ChannelStateMachine.ChannelStatus
    readonly capabilities?: boolean
  } = {}
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const channels = yield* ChannelsRepo.ChannelsRepo
    const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
    const workspaceId = yield* Ids.newId("ws")
    yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'test', ${now}, ${now})`
    const channelId = yield* Ids.newId("ch")
    const provider = options.provider ?? "sandbox"
    yield* channels.insert({
      id: channelId,
      workspaceId,
      name: `channel ${channelId}`,
      provider,
      status: options.status ?? "connected",
      isDefault: false,
      phoneNumber: provider === "sandbox" ? "+15550100001" : null,
      capabilities: provider === "sandbox" && options.capabilities !== false
        ? { max_throughput_mps: Messaging.THROUGHPUT_MPS.sandbox, message_types: ["text"] }
        : null,
      now
    })
    return { workspaceId, channelId }
  }).pipe(Effect.orDie)

/** A message row as the send path writes it (contact, conversation, message, timeline, event), without a wake-up. */
export const queueMessage = (
  target: { readonly workspaceId: string; readonly channelId: string },
  options: {
    readonly to?: string
    readonly category?: MessageCategory.Category
    readonly status?: MessageStateMachine.MessageStatus
    readonly createdAt?: number
  } = {}
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const messages = yield* MessagesRepo.MessagesRepo
    const contacts = yield* ContactsRepo.ContactsRepo
    const conversations = yield* ConversationsRepo.ConversationsRepo
    const now = Schemas.toTimestamp(options.createdAt ?? (yield* Clock.currentTimeMillis))
    const category = options.category ?? "utility"
    return yield* sql.withTransaction(Effect.gen(function*() {
      const contact = yield* contacts.upsertContact(target.workspaceId, options.to ?? "+4915112345678", now)
      const conversationId = yield* conversations.upsertConversation(
        target.workspaceId,
        target.channelId,
        contact.id,
        now
      )
      const message = yield* messages.insert({
        id: yield* Ids.newId("msg"),
        workspaceId: target.workspaceId,
        channelId: target.channelId,
        conversationId,
        contactId: contact.id,
        direction: "outbound",
        from: null,
        to: options.to ?? "+4915112345678",
        body: "hello",
        category,
        priority: MessageCategory.PRIORITY[category],
        status: options.status ?? "queued",
        metadata: {},
        now
      })
      if (message.status === "queued") yield* messages.appendQueuedEvent(message)
      return message
    }))
  }).pipe(Effect.orDie)

/** Polls the message until `done` holds (or fails after `timeoutMs`). */
export const waitFor = (id: string, done: (message: Messaging.Message) => boolean, timeoutMs = 20_000) =>
  Effect.gen(function*() {
    const messages = yield* MessagesRepo.MessagesRepo
    const deadline = Date.now() + timeoutMs
    while (true) {
      const found = yield* messages.findById(id)
      if (Option.isSome(found) && done(found.value)) return found.value
      if (Date.now() > deadline) {
        return yield* Effect.dieMessage(
          `message ${id} never got there (status ${Option.getOrUndefined(found)?.status ?? "missing"})`
        )
      }
      yield* Effect.sleep("100 millis")
    }
  })

export const timeline = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ from_state: string | null; to_state: string; at: Date; reason: string | null }>`
      SELECT from_state, to_state, at, reason FROM message_transitions WHERE message_id = ${id} ORDER BY id`
  }).pipe(Effect.orDie)

export const eventTypes = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ type: string; envelope: string }>`SELECT type, envelope FROM events
      WHERE object_id = ${id} ORDER BY created_at, id`
    return rows.map((r) => ({ type: r.type, data: JSON.parse(r.envelope).data }))
  }).pipe(Effect.orDie)

/**
 * A provider whose connections take sends with `send` and report nothing else: no events, no
 * receipts, no pairing (what a linked device looks like to its Channel entity).
 */
export const stubProvider = (
  capabilities: ChannelProvider.ChannelConnection["capabilities"],
  send: ChannelProvider.ChannelConnection["send"]
): ChannelProvider.ChannelProvider => ({
  connect: (channel) =>
    Effect.succeed(
      {
        capabilities,
        send,
        events: Stream.never,
        pendingReceipts: Effect.succeed(0),
        pairing: {
          snapshot: Effect.succeed({
            channelId: channel.id,
            status: channel.status,
            phoneNumber: null,
            qr: null,
            connectionError: null
          }),
          subscribe: Effect.die("not used"),
          start: Effect.void,
          logout: Effect.void
        }
      } satisfies ChannelProvider.ChannelConnection
    )
})
