/**
 * Messages, their timeline, contacts and conversations. A `queued` row is the dispatch queue.
 * `transition` is the guarded state change every writer goes through: row lock, allowed
 * from-state check, update, timeline row and event row — call it inside a transaction.
 */
import { SqlClient } from "@effect/sql"
import {
  ALLOWED_FROM,
  DEFAULT_CATEGORY,
  DomainEvent,
  Message,
  messageStatusEvent,
  MessageWithTimeline,
  newId,
  PRIORITY,
  toTimestamp
} from "@switchboard/domain"
import type { Category, CursorPosition, Failure, MessageStatus } from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"
import { EventsRepo } from "./EventsRepo.js"
import { iso, isoOrNull } from "./Rows.js"

export const toMessage = (r: any): Message =>
  new Message({
    id: r.id,
    object: "message",
    workspace_id: r.workspace_id,
    channel_id: r.channel_id,
    conversation_id: r.conversation_id,
    contact_id: r.contact_id,
    direction: r.direction,
    from: r.from_number ?? null,
    to: r.to_number,
    type: r.type,
    text: { body: r.body },
    template: r.template ?? null,
    category: r.category,
    status: r.status,
    failure: r.failure ?? null,
    metadata: r.metadata ?? {},
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    sent_at: isoOrNull(r.sent_at),
    delivered_at: isoOrNull(r.delivered_at),
    read_at: isoOrNull(r.read_at)
  })

export interface QueuedMessage {
  readonly id: string
  readonly to: string
  readonly body: string
  readonly attempts: number
  readonly category: Category
}

/** A transition that happened. */
export interface Transitioned {
  readonly message: Message
  readonly from: MessageStatus
  /** failed dispatch attempts so far */
  readonly attempts: number
}

export interface MessageFilters {
  readonly status?: MessageStatus | undefined
  readonly direction?: "outbound" | "inbound" | undefined
  readonly category?: Category | undefined
  readonly channelId?: string | undefined
}

export class MessagesRepo extends Effect.Service<MessagesRepo>()("@switchboard/db/MessagesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo

    /** The contact for a number, created when missing; `created` tells which. */
    const upsertContact = Effect.fn("MessagesRepo.upsertContact")(
      function*(workspaceId: string, phone: string, now: string) {
        const existing = yield* sql<
          { id: string }
        >`SELECT id FROM contacts WHERE workspace_id = ${workspaceId} AND phone_number = ${phone}`
        if (existing[0]) return { id: existing[0].id, created: false }
        const id = yield* newId("cnt")
        const inserted = yield* sql<
          { id: string }
        >`INSERT INTO contacts (id, workspace_id, phone_number, created_at, updated_at)
        VALUES (${id}, ${workspaceId}, ${phone}, ${now}, ${now})
        ON CONFLICT (workspace_id, phone_number) DO NOTHING RETURNING id`
        if (inserted[0]) {
          yield* events.append({
            workspaceId,
            event: DomainEvent.make("contact.created", { object: "contact", object_id: id, contact_id: id }),
            occurredAt: now
          })
          return { id, created: true }
        }
        const again = yield* sql<
          { id: string }
        >`SELECT id FROM contacts WHERE workspace_id = ${workspaceId} AND phone_number = ${phone}`
        return { id: again[0]!.id, created: false }
      }
    )

    /** The open conversation of (channel, contact), created (or reopened) when missing. */
    const upsertConversation = Effect.fn("MessagesRepo.upsertConversation")(
      function*(workspaceId: string, channelId: string, contactId: string, now: string) {
        const open = yield* sql<{ id: string }>`UPDATE conversations SET last_message_at = ${now}, updated_at = ${now}
          WHERE channel_id = ${channelId} AND contact_id = ${contactId} AND status = 'open' RETURNING id`
        if (open[0]) return open[0].id
        const id = yield* newId("cnv")
        const inserted = yield* sql<
          { id: string }
        >`INSERT INTO conversations (id, workspace_id, channel_id, contact_id, status,
            last_message_at, created_at, updated_at)
          VALUES (${id}, ${workspaceId}, ${channelId}, ${contactId}, 'open', ${now}, ${now}, ${now})
          ON CONFLICT (channel_id, contact_id) WHERE status = 'open' DO NOTHING RETURNING id`
        if (!inserted[0]) {
          const again = yield* sql<{ id: string }>`SELECT id FROM conversations
            WHERE channel_id = ${channelId} AND contact_id = ${contactId} AND status = 'open'`
          return again[0]!.id
        }
        yield* events.append({
          workspaceId,
          event: DomainEvent.make("conversation.created", {
            object: "conversation",
            object_id: id,
            conversation_id: id,
            status: "open"
          }),
          occurredAt: now
        })
        return id
      }
    )

    const insert = Effect.fn("MessagesRepo.insert")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly channelId: string
      readonly conversationId: string
      readonly contactId: string
      readonly direction: "outbound" | "inbound"
      readonly from: string | null
      readonly to: string
      readonly body: string
      readonly category: Category
      readonly priority: number
      readonly status: MessageStatus
      readonly metadata: Record<string, string>
      readonly now: string
      /** inbound only: the provider's id of the message */
      readonly providerMessageId?: string | undefined
    }) {
      const delivered = input.status === "delivered" ? input.now : null
      // the message and the first row of its timeline in one round trip
      const rows = yield* sql`WITH inserted AS (
          INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction,
            from_number, to_number, type, body, category, priority, status, metadata, created_at, updated_at,
            delivered_at, provider_message_id)
          VALUES (${input.id}, ${input.workspaceId}, ${input.channelId}, ${input.conversationId}, ${input.contactId},
            ${input.direction}, ${input.from}, ${input.to}, 'text', ${input.body}, ${input.category}, ${input.priority},
            ${input.status}, ${JSON.stringify(input.metadata)}::jsonb, ${input.now}, ${input.now}, ${delivered},
            ${input.providerMessageId ?? null})
          RETURNING *
        ), timeline AS (
          INSERT INTO message_transitions (message_id, from_state, to_state, at)
          SELECT id, NULL, status, created_at FROM inserted
        )
        SELECT * FROM inserted`
      return toMessage(rows[0])
    })

    /** `message.queued` for a message just inserted as queued (same transaction). */
    const appendQueuedEvent = Effect.fn("MessagesRepo.appendQueuedEvent")(function*(message: Message) {
      yield* events.append({
        workspaceId: message.workspace_id,
        event: DomainEvent.make("message.queued", {
          object: "message",
          object_id: message.id,
          message_id: message.id,
          from_state: null,
          to_state: "queued",
          category: message.category
        }),
        occurredAt: message.created_at
      })
    })

    /**
     * Moves a message to `to` when its current state allows it; otherwise does nothing (a late
     * or repeated report). Returns the updated message when it moved. Only the Message entity
     * calls this (it is the single writer of a message's status).
     */
    const transition = Effect.fn("MessagesRepo.transition")(function*(
      id: string,
      to: MessageStatus,
      options: {
        readonly reason?: string | undefined
        readonly failure?: Failure | undefined
        readonly nextAttemptAt?: string | undefined
        readonly countAttempt?: boolean | undefined
        /** when it happened, if earlier than now (a provider receipt carries its own time) */
        readonly occurredAt?: string | undefined
      } = {}
    ) {
      const now = toTimestamp(yield* Clock.currentTimeMillis)
      const at = options.occurredAt ?? now
      // one statement: lock the row, move it when its current state allows `to` (the same rule as
      // `canTransition`), and add the timeline row with the state it came from
      const rows = yield* sql`WITH current AS (
          SELECT id, status FROM messages WHERE id = ${id} FOR UPDATE
        ), moved AS (
          UPDATE messages SET
            status = ${to},
            updated_at = ${now},
            failure = CASE WHEN ${options.failure !== undefined} THEN ${
        options.failure ? JSON.stringify(options.failure) : null
      }::jsonb ELSE failure END,
            attempts = attempts + ${options.countAttempt ? 1 : 0},
            next_attempt_at = ${options.nextAttemptAt ?? null},
            sent_at = CASE WHEN ${to} IN ('sent', 'delivered', 'read') THEN COALESCE(sent_at, ${at}) ELSE sent_at END,
            delivered_at = CASE WHEN ${to} IN ('delivered', 'read') THEN COALESCE(delivered_at, ${at}) ELSE delivered_at END,
            read_at = CASE WHEN ${to} = 'read' THEN COALESCE(read_at, ${at}) ELSE read_at END
          FROM current
          WHERE messages.id = current.id AND current.status IN ${sql.in(ALLOWED_FROM[to] as Array<string>)}
            AND messages.status IN ${sql.in(ALLOWED_FROM[to] as Array<string>)}
          ${
        // nothing leaves for the provider once its channel stopped dispatching (archived, ...)
        to === "dispatching"
          ? sql`AND EXISTS (SELECT 1 FROM channels c WHERE c.id = messages.channel_id AND c.status = 'connected')`
          : sql``}
          RETURNING messages.*, current.status AS from_state
        ), timeline AS (
          INSERT INTO message_transitions (message_id, from_state, to_state, reason, at)
          SELECT id, from_state, ${to}, ${options.reason ?? null}, ${at} FROM moved
        )
        SELECT * FROM moved`
      if (!rows[0]) return Option.none<Transitioned>()
      const from = rows[0].from_state as MessageStatus
      const message = toMessage(rows[0])
      const event = messageStatusEvent(to, {
        object: "message",
        object_id: message.id,
        message_id: message.id,
        from_state: from,
        category: message.category,
        ...(to === "failed_permanent" && message.failure
          ? {
            failure_class: message.failure.class,
            error_code: message.failure.code,
            reason: message.failure.reason
          }
          : {})
      })
      if (event) yield* events.append({ workspaceId: message.workspace_id, event, occurredAt: at })
      return Option.some<Transitioned>({ message, from, attempts: Number(rows[0].attempts) })
    })

    const find = Effect.fn("MessagesRepo.find")(function*(workspaceId: string, id: string) {
      const rows = yield* sql`SELECT * FROM messages WHERE workspace_id = ${workspaceId} AND id = ${id}`
      if (!rows[0]) return Option.none<MessageWithTimeline>()
      const timeline = yield* sql<any>`SELECT from_state, to_state, at, reason FROM message_transitions
        WHERE message_id = ${id} ORDER BY id`
      return Option.some(
        new MessageWithTimeline({
          ...toMessage(rows[0]),
          timeline: timeline.map((t) => ({
            from_state: t.from_state,
            to_state: t.to_state,
            at: iso(t.at),
            reason: t.reason
          }))
        })
      )
    }, Effect.orDie)

    /** Any workspace, for entities. */
    const findById = Effect.fn("MessagesRepo.findById")(function*(id: string) {
      const rows = yield* sql`SELECT * FROM messages WHERE id = ${id}`
      return Option.map(Option.fromNullable(rows[0]), toMessage)
    }, Effect.orDie)

    const list = Effect.fn("MessagesRepo.list")(function*(
      workspaceId: string,
      filters: MessageFilters,
      limit: number,
      after: CursorPosition | undefined
    ) {
      const rows = yield* sql`SELECT * FROM messages WHERE workspace_id = ${workspaceId}
        ${filters.status ? sql`AND status = ${filters.status}` : sql``}
        ${filters.direction ? sql`AND direction = ${filters.direction}` : sql``}
        ${filters.category ? sql`AND category = ${filters.category}` : sql``}
        ${filters.channelId ? sql`AND channel_id = ${filters.channelId}` : sql``}
        ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
      return rows.map(toMessage)
    }, Effect.orDie)

    /** The channel's next due messages: priority order, FIFO within a priority. */
    /** Due queued messages in dispatch order; `skipRecipients`: recipients that must wait (QR spacing). */
    const nextQueued = Effect.fn("MessagesRepo.nextQueued")(function*(
      channelId: string,
      limit: number,
      skipRecipients: ReadonlyArray<string> = []
    ) {
      const now = toTimestamp(yield* Clock.currentTimeMillis)
      const rows = yield* sql<any>`SELECT id, to_number, body, attempts, category FROM messages
        WHERE channel_id = ${channelId} AND status = 'queued' AND (next_attempt_at IS NULL OR next_attempt_at <= ${now})
        ${skipRecipients.length > 0 ? sql`AND NOT ${sql.in("to_number", skipRecipients)}` : sql``}
        ORDER BY priority, created_at, id LIMIT ${limit}`
      return rows.map((r): QueuedMessage => ({
        id: r.id,
        to: r.to_number,
        body: r.body,
        attempts: r.attempts,
        category: r.category
      }))
    }, Effect.orDie)

    /** Recipients and times of the channel's dispatches since `since` (epoch ms): QR per-recipient spacing. */
    const dispatchesSince = Effect.fn("MessagesRepo.dispatchesSince")(function*(channelId: string, since: number) {
      const rows = yield* sql<{ to_number: string; at: Date | string }>`SELECT m.to_number, t.at
        FROM message_transitions t JOIN messages m ON m.id = t.message_id
        WHERE m.channel_id = ${channelId} AND m.direction = 'outbound' AND t.to_state = 'dispatching'
          AND t.at > ${toTimestamp(since)}`
      return rows.map((r) => ({ to: r.to_number, at: new Date(r.at).getTime() }))
    }, Effect.orDie)

    /** How many messages wait on a channel (for the backlog refusal). */
    const queuedCount = Effect.fn("MessagesRepo.queuedCount")(function*(channelId: string) {
      const rows = yield* sql<
        { n: number }
      >`SELECT count(*)::int AS n FROM messages WHERE channel_id = ${channelId} AND status = 'queued'`
      return rows[0]?.n ?? 0
    }, Effect.orDie)

    /**
     * Connected channels with due queued messages (the sweeper wakes them), in id order after
     * `after`: the sweeper pages through them (starting again from the first once a page comes
     * back short), so with more than `limit` such channels every one is still reached.
     */
    const channelsWithDueWork = Effect.fn("MessagesRepo.channelsWithDueWork")(function*(limit: number, after = "") {
      const now = toTimestamp(yield* Clock.currentTimeMillis)
      // only channels that can dispatch (a disconnected channel's backlog waits or expires
      // quietly); one index probe per connected channel (`messages_due`)
      const rows = yield* sql<{ id: string }>`SELECT c.id FROM channels c WHERE c.status = 'connected'
        AND c.id > ${after}
        AND EXISTS (SELECT 1 FROM messages m WHERE m.channel_id = c.id AND m.status = 'queued'
          AND COALESCE(m.next_attempt_at, '-infinity'::timestamptz) <= ${now})
        ORDER BY c.id LIMIT ${limit}`
      return rows.map((r) => r.id)
    }, Effect.orDie)

    /** Ids of messages queued (or waiting for a retry) before `cutoff`. */
    const staleQueued = Effect.fn("MessagesRepo.staleQueued")(function*(cutoff: string, limit: number) {
      const rows = yield* sql<{ id: string }>`SELECT id FROM messages
        WHERE status IN ('queued', 'failed_retryable') AND created_at < ${cutoff} LIMIT ${limit}`
      return rows.map((r) => r.id)
    }, Effect.orDie)

    /** Messages left in `dispatching` (their dispatcher died) since before `cutoff`. */
    const stuckDispatching = Effect.fn("MessagesRepo.stuckDispatching")(function*(cutoff: string, limit: number) {
      const rows = yield* sql<{ id: string; attempts: number }>`SELECT id, attempts FROM messages
        WHERE status = 'dispatching' AND updated_at < ${cutoff} LIMIT ${limit}`
      return rows
    }, Effect.orDie)

    /** Ids of a channel's messages that have not been dispatched. */
    const undispatchedOf = Effect.fn("MessagesRepo.undispatchedOf")(function*(channelId: string) {
      const rows = yield* sql<{ id: string }>`SELECT id FROM messages
        WHERE channel_id = ${channelId} AND status IN ('queued', 'failed_retryable')`
      return rows.map((r) => r.id)
    }, Effect.orDie)

    /** Undispatched messages of archived channels (their cancellation was lost). */
    const undispatchedOfArchived = Effect.fn("MessagesRepo.undispatchedOfArchived")(function*(limit: number) {
      // `failed_retryable` never outlives its transaction (DispatchFailed re-queues in the same one)
      const rows = yield* sql<{ id: string }>`SELECT m.id FROM channels c JOIN messages m ON m.channel_id = c.id
        WHERE c.status = 'archived' AND m.status = 'queued' LIMIT ${limit}`
      return rows.map((r) => r.id)
    }, Effect.orDie)

    /**
     * Channels whose outbound messages wait for a receipt that is overdue: accepted by the provider
     * but not reported `sent`, or `sent` / `delivered` but not on to `read`, since before
     * `overdueBefore`. The connection that would report them went away (a runner died with the
     * receipt timers in its memory); a woken channel that is not active reconnects, and a reconnect
     * hears what is still under way. `provider_accepted` counts after `acceptedAfter`; `sent` and
     * `delivered` only after `laterStagesAfter` (a recipient may never read: the repair is tried for
     * a while, not forever).
     */
    const channelsAwaitingReceipts = Effect.fn("MessagesRepo.channelsAwaitingReceipts")(
      function*(input: {
        readonly overdueBefore: string
        readonly acceptedAfter: string
        readonly laterStagesAfter: string
        readonly limit: number
        /** paging like `channelsWithDueWork`: channel ids after this one, in order */
        readonly after?: string
      }) {
        const rows = yield* sql<{ channel_id: string }>`SELECT channel_id FROM (
            SELECT channel_id FROM messages
              WHERE status = 'provider_accepted' AND updated_at < ${input.overdueBefore}
                AND updated_at > ${input.acceptedAfter}
            UNION
            SELECT channel_id FROM messages
              WHERE direction = 'outbound' AND status IN ('sent', 'delivered') AND updated_at < ${input.overdueBefore}
                AND updated_at > ${input.laterStagesAfter}
          ) overdue WHERE channel_id > ${input.after ?? ""}
          ORDER BY channel_id LIMIT ${input.limit}`
        return rows.map((r) => r.channel_id)
      },
      Effect.orDie
    )

    /**
     * Records an inbound message the provider reported (status `delivered`), with its contact,
     * conversation and `message.received`; call inside a transaction. `None` when this provider
     * message was recorded before.
     */
    const recordInbound = Effect.fn("MessagesRepo.recordInbound")(function*(input: {
      readonly workspaceId: string
      readonly channelId: string
      /** the channel's own number, if known */
      readonly channelNumber: string | null
      readonly providerMessageId: string
      readonly from: string
      readonly body: string
      readonly now: string
    }) {
      const seen = yield* sql`SELECT 1 FROM messages
        WHERE channel_id = ${input.channelId} AND provider_message_id = ${input.providerMessageId}`
      if (seen.length > 0) return Option.none<Message>()
      const contact = yield* upsertContact(input.workspaceId, input.from, input.now)
      const conversationId = yield* upsertConversation(input.workspaceId, input.channelId, contact.id, input.now)
      const message = yield* insert({
        id: yield* newId("msg"),
        workspaceId: input.workspaceId,
        channelId: input.channelId,
        conversationId,
        contactId: contact.id,
        direction: "inbound",
        from: input.from,
        to: input.channelNumber ?? "",
        body: input.body,
        category: DEFAULT_CATEGORY,
        priority: PRIORITY[DEFAULT_CATEGORY],
        status: "delivered",
        metadata: {},
        now: input.now,
        providerMessageId: input.providerMessageId
      })
      yield* events.append({
        workspaceId: input.workspaceId,
        event: DomainEvent.make("message.received", {
          object: "message",
          object_id: message.id,
          message_id: message.id,
          conversation_id: message.conversation_id,
          contact_id: message.contact_id,
          channel_id: message.channel_id,
          direction: "inbound",
          type: "text"
        }),
        occurredAt: input.now
      })
      return Option.some(message)
    })

    return {
      upsertContact,
      upsertConversation,
      insert,
      appendQueuedEvent,
      transition,
      find,
      findById,
      list,
      nextQueued,
      dispatchesSince,
      queuedCount,
      channelsWithDueWork,
      staleQueued,
      stuckDispatching,
      undispatchedOf,
      undispatchedOfArchived,
      channelsAwaitingReceipts,
      recordInbound
    } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
