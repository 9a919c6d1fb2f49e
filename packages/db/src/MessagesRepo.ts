/**
 * Messages and their timeline. `transition` is the guarded state change every writer goes
 * through: row lock, allowed from-state check, update, timeline row, event row and webhook
 * fan-out, in one statement (atomic without a transaction). What the dispatchers and sweepers read of the queue is `DispatchQueueRepo`.
 *
 * Over 350 lines: the move and the batch of receipts keep their guarded statements side by side,
 * with the envelope templates that complete their events, so that the two stay the same rule.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  Events,
  Ids,
  Media,
  MessageCategory,
  MessageContent,
  MessageStateMachine,
  Messaging,
  type Pagination,
  Schemas
} from "@switchboard/domain"
import { Clock, Effect, Option, Schema } from "effect"
import { DispatchOrder } from "./DispatchQueueRepo.js"
import { envelopeTemplate, EventsRepo } from "./EventsRepo.js"
import { dieOnDatabaseError, iso, isoOrNull, TimestampColumn } from "./Rows.js"
import { leaseHeld, type ShardLease } from "./ShardLease.js"

/** Stands for the message's workspace in an envelope template (the statement puts the real one). */
const PLACEHOLDER_WORKSPACE = "ws_00000000000000000000000000"

/**
 * The states a receipt moves along: a receipt to one of them is allowed from every state before
 * it and from no other (`ALLOWED_FROM` says the same; checked here at load, so the batch's rank
 * comparison, far cheaper for the planner than a list of allowed pairs, stays the same rule).
 */
const RECEIPT_TRACK = ["dispatching", "provider_accepted", "sent", "delivered", "read"] as const
for (const to of ["provider_accepted", ...MessageStateMachine.RECEIPT_STATUSES] as const) {
  const before = RECEIPT_TRACK.slice(0, RECEIPT_TRACK.indexOf(to))
  if ([...MessageStateMachine.ALLOWED_FROM[to]].sort().join() !== [...before].sort().join()) {
    throw new Error(`receipts: ALLOWED_FROM[${to}] is not the states before it`)
  }
}

/** What `receipts` moves a message to: the provider took it, or a receipt. */
export type ReceiptTrackStatus = "provider_accepted" | MessageStateMachine.ReceiptStatus

/** What a status event's envelope leaves open for the statement, in the order they appear. */
const RECEIPT_SLOTS = ["workspace_id", "from_state", "category"]

/** The columns of a `messages` row. */
export const MessageColumns = Schema.Struct({
  id: Ids.Id("msg"),
  workspace_id: Ids.Id("ws"),
  channel_id: Ids.Id("ch"),
  conversation_id: Ids.Id("cnv"),
  contact_id: Ids.Id("cnt"),
  direction: Messaging.Direction,
  from_number: Schema.NullOr(Schema.String),
  to_number: Schema.String,
  type: MessageContent.MessageType,
  body: Schema.String,
  template: Schema.NullOr(
    Schema.Struct({
      id: Ids.Id("tpl"),
      slug: Schema.String,
      variables: Schema.Record({ key: Schema.String, value: Schema.String })
    })
  ),
  category: MessageCategory.Category,
  status: MessageStateMachine.MessageStatus,
  failure: Schema.NullOr(Messaging.Failure),
  metadata: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })),
  created_at: TimestampColumn,
  updated_at: TimestampColumn,
  sent_at: Schema.NullOr(TimestampColumn),
  delivered_at: Schema.NullOr(TimestampColumn),
  read_at: Schema.NullOr(TimestampColumn),
  /** the member of a non-text type, as the wire shows it (the `Message` class checks it) */
  content: Schema.NullOr(Schema.Unknown),
  reply_to: Schema.NullOr(Ids.Id("msg")),
  sender_lid: Schema.NullOr(Schema.String),
  media_id: Schema.NullOr(Ids.Id("med")),
  media_status: Schema.NullOr(Media.MediaStatus),
  media_failure: Schema.NullOr(Schema.String)
})

/**
 * A row of `messages` decoded to the domain's `Message`: the one shape of the resource
 * (docs/ARCHITECTURE.md "Adding a resource"). The ids are checked and typed (`msg_...`, `ws_...`,
 * `ch_...`, `cnv_...`, `cnt_...`, `tpl_...`, `med_...`) while decoding, the timestamps become the
 * wire's ISO strings; no mapper, no cast. Reads and inbound writes only: the send path writes
 * through `SendWritesRepo` and the dispatch path reads back `Transitioned`, never a `Message`.
 */
export const MessageRow = Schema.transform(MessageColumns, Messaging.Message, {
  strict: true,
  decode: (r) => messageOfColumns(r),
  encode: (m) => columnsOfMessage(m)
})

/** A `messages` row's columns (decoded) as the wire's message (encoded): `MessageRow`'s decode. */
export const messageOfColumns = (
  r: typeof MessageColumns.Type
): typeof Messaging.Message.Encoded => ({
  id: r.id,
  object: "message" as const,
  workspace_id: r.workspace_id,
  channel_id: r.channel_id,
  conversation_id: r.conversation_id,
  contact_id: r.contact_id,
  direction: r.direction,
  from: r.from_number,
  to: r.to_number,
  type: r.type,
  text: { body: r.body },
  ...(r.type !== "text" && r.type !== "template" && r.content !== null && r.content !== undefined
    ? { [r.type]: r.content }
    : {}),
  context: { reply_to: r.reply_to },
  sender: r.direction === "inbound" ? { phone_number: r.from_number, whatsapp_lid: r.sender_lid } : null,
  media: r.media_id
    ? { id: r.media_id, status: r.media_status ?? "pending" as const, failure_reason: r.media_failure }
    : null,
  template: r.template,
  category: r.category,
  status: r.status,
  failure: r.failure,
  metadata: r.metadata ?? {},
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  sent_at: isoOrNull(r.sent_at),
  delivered_at: isoOrNull(r.delivered_at),
  read_at: isoOrNull(r.read_at)
})

/** The wire's message as a `messages` row's columns: `MessageRow`'s encode. */
export const columnsOfMessage = (m: typeof Messaging.Message.Encoded): typeof MessageColumns.Type => ({
  id: m.id,
  workspace_id: m.workspace_id,
  channel_id: m.channel_id,
  conversation_id: m.conversation_id,
  contact_id: m.contact_id,
  direction: m.direction,
  from_number: m.from,
  to_number: m.to,
  type: m.type,
  body: m.text.body,
  template: m.template,
  category: m.category,
  status: m.status,
  failure: m.failure,
  metadata: m.metadata,
  created_at: m.created_at,
  updated_at: m.updated_at,
  sent_at: m.sent_at,
  delivered_at: m.delivered_at,
  read_at: m.read_at,
  content: m.type === "text" || m.type === "template" ? null : m[m.type] ?? null,
  reply_to: m.context.reply_to,
  sender_lid: m.sender?.whatsapp_lid ?? null,
  media_id: m.media?.id ?? null,
  media_status: m.media?.status ?? null,
  media_failure: m.media?.failure_reason ?? null
})
const decodeMessages = Schema.decodeUnknown(Schema.Array(MessageRow))

/** A row of `message_transitions` decoded to the domain's `TimelineEntry` (its time as the wire's ISO string). */
const TransitionRow = Schema.transform(
  Schema.Struct({
    from_state: Schema.NullOr(MessageStateMachine.MessageStatus),
    to_state: MessageStateMachine.MessageStatus,
    at: TimestampColumn,
    reason: Schema.NullOr(Schema.String)
  }),
  Messaging.TimelineEntry,
  { strict: true, decode: (t) => ({ ...t, at: iso(t.at) }), encode: (t) => t }
)

const decodeMessageId = Schema.decodeUnknown(Ids.Id("msg"))

/**
 * A transition that happened: what its callers use of the moved row (not a whole `Message`: the
 * dispatch path makes one per move, and building and checking a `Message` from our own row showed
 * in its profile).
 */
export interface Transitioned {
  readonly id: string
  /** the status it moved to */
  readonly status: MessageStateMachine.MessageStatus
  readonly from: MessageStateMachine.MessageStatus
  /** failed dispatch attempts so far */
  readonly attempts: number
  /** the provider of the message's channel (metrics label transitions with it) */
  readonly provider: string
}

/** The columns of a moved row that `transition` reads back. */
interface MovedRow {
  readonly id: string
  readonly status: MessageStateMachine.MessageStatus
  readonly from_state: MessageStateMachine.MessageStatus
  readonly attempts: number | string
  readonly workspace_id: string
  readonly category: MessageCategory.Category
  readonly failure: Messaging.Failure | null
  readonly provider: string | null
}

const toTransitioned = (row: MovedRow): Transitioned => ({
  id: row.id,
  status: row.status,
  from: row.from_state,
  attempts: Number(row.attempts),
  provider: row.provider ?? "unknown"
})

export interface TransitionOptions {
  readonly reason?: string | undefined
  readonly failure?: Messaging.Failure | undefined
  readonly nextAttemptAt?: string | undefined
  readonly countAttempt?: boolean | undefined
  /** when it happened, if earlier than now (a provider receipt carries its own time) */
  readonly occurredAt?: string | undefined
  /**
   * `dispatching` only: recipients that must wait for their per-recipient spacing (QR); their
   * queued messages do not outrank this one
   */
  readonly waitingRecipients?: ReadonlyArray<string> | undefined
  /** the caller's shard lease: nothing moves unless it still holds it (`ShardLease`) */
  readonly lease?: ShardLease | undefined
}

export interface MessageFilters {
  readonly status?: MessageStateMachine.MessageStatus | undefined
  readonly direction?: "outbound" | "inbound" | undefined
  readonly category?: MessageCategory.Category | undefined
  readonly channelId?: string | undefined
  readonly conversationId?: string | undefined
}

export class MessagesRepo extends Effect.Service<MessagesRepo>()("@switchboard/db/MessagesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventsRepo

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
      readonly category: MessageCategory.Category
      readonly priority: number
      readonly status: MessageStateMachine.MessageStatus
      readonly metadata: Record<string, string>
      readonly now: string
      /** inbound only: the provider's id of the message */
      readonly providerMessageId?: string | undefined
      /** a template send: the template and the values `body` was rendered with */
      readonly template?: { readonly id: string; readonly slug: string; readonly variables: Record<string, string> }
      /** inbound of another kind than text: its type and member (docs/API.md "Messages") */
      readonly type?: MessageContent.MessageType | undefined
      readonly content?: Messaging.MessageMemberValue | undefined
      readonly replyTo?: string | null | undefined
      readonly senderLid?: string | null | undefined
      readonly mediaId?: string | null | undefined
    }) {
      const type = input.type ?? (input.template ? "template" : "text")
      const delivered = input.status === "delivered" ? input.now : null
      // the message and the first row of its timeline in one round trip
      const rows = yield* sql`WITH inserted AS (
          INSERT INTO messages (id, workspace_id, channel_id, conversation_id, contact_id, direction,
            from_number, to_number, type, body, template, category, priority, status, metadata, created_at, updated_at,
            delivered_at, provider_message_id, content, reply_to, sender_lid, media_id, media_status)
          VALUES (${input.id}, ${input.workspaceId}, ${input.channelId}, ${input.conversationId}, ${input.contactId},
            ${input.direction}, ${input.from}, ${input.to}, ${type}, ${input.body},
            ${input.template ? JSON.stringify(input.template) : null}::jsonb, ${input.category}, ${input.priority},
            ${input.status}, ${JSON.stringify(input.metadata)}::jsonb, ${input.now}, ${input.now}, ${delivered},
            ${input.providerMessageId ?? null},
            ${input.content === undefined ? null : JSON.stringify(input.content)}::jsonb, ${input.replyTo ?? null},
            ${input.senderLid ?? null}, ${input.mediaId ?? null}, ${input.mediaId ? "pending" : null})
          RETURNING *
        ), timeline AS (
          INSERT INTO message_transitions (message_id, from_state, to_state, at)
          SELECT id, NULL, status, created_at FROM inserted
        )
        SELECT * FROM inserted`
      return (yield* decodeMessages(rows))[0]!
    }, dieOnDatabaseError)

    /** `message.queued` for a message just inserted as queued (same transaction). */
    const appendQueuedEvent = Effect.fn("MessagesRepo.appendQueuedEvent")(function*(message: Messaging.Message) {
      yield* events.append({
        workspaceId: message.workspace_id,
        event: Events.queuedEvent(message),
        occurredAt: message.created_at
      })
    }, dieOnDatabaseError)

    /** `transition`'s statement (and, a failure read from the row, its event). */
    const moveOnce = Effect.fn("MessagesRepo.transition")(function*(
      id: string,
      to: MessageStateMachine.MessageStatus,
      options: TransitionOptions = {}
    ) {
      const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
      const at = options.occurredAt ?? now
      const waiting = options.waitingRecipients ?? []
      const failure = options.failure
      // the status event, when `to` reports one: written by the same statement, its envelope
      // completed there with what only the locked row knows (the state it came from, the
      // message's workspace and category). A failure read from the row (none given) takes the
      // two-statement way below.
      const eventType = MessageStateMachine.STATUS_EVENT[to]
      const inStatement = eventType !== undefined && (to !== "failed_permanent" || failure !== undefined)
      const eventId = inStatement ? yield* Ids.newId("evt") : undefined
      // hot path: no decode per move (bench/RESULTS.md 1 "Before and after number protection and the structure step")
      const messageId = id as Messaging.Message["id"]
      const outbox = inStatement
        ? events.outboxCtes(sql`SELECT ${eventId!} AS id, moved.workspace_id, ${eventType!} AS type,
            moved.id AS object_id, ${
          events.envelopeSql(
            envelopeTemplate({
              id: eventId!,
              createdAt: at,
              workspaceId: PLACEHOLDER_WORKSPACE,
              open: RECEIPT_SLOTS,
              event: Events.messageStatusEvent(to, {
                object: "message",
                object_id: messageId,
                message_id: messageId,
                from_state: "queued",
                category: "utility",
                ...(to === "failed_permanent" && failure
                  ? { failure_class: failure.class, error_code: failure.code, reason: failure.reason }
                  : {})
              })!
            }),
            { workspace_id: sql`moved.workspace_id`, from_state: sql`moved.from_state`, category: sql`moved.category` }
          )
        } AS envelope, ${at}::timestamptz AS created_at FROM moved`)
        : undefined
      // one statement: lock the row, move it when its current state allows `to` (the same rule as
      // `canTransition`), add the timeline row with the state it came from, and (most moves) the
      // status event with its webhook deliveries
      const rows = yield* sql<MovedRow>`WITH current AS (
          SELECT id, status FROM messages WHERE id = ${id}${
        options.lease === undefined ? sql`` : sql` AND ${leaseHeld(sql, options.lease)}`
      } FOR UPDATE
        ), moved AS (
          UPDATE messages SET
            status = ${to},
            updated_at = ${now},
            failure = CASE WHEN ${failure !== undefined} THEN ${
        failure ? JSON.stringify(failure) : null
      }::jsonb ELSE failure END,
            attempts = attempts + ${options.countAttempt ? 1 : 0},
            next_attempt_at = ${options.nextAttemptAt ?? null},
            sent_at = CASE WHEN ${to} IN ('sent', 'delivered', 'read') THEN COALESCE(sent_at, ${at}) ELSE sent_at END,
            delivered_at = CASE WHEN ${to} IN ('delivered', 'read') THEN COALESCE(delivered_at, ${at}) ELSE delivered_at END,
            read_at = CASE WHEN ${to} = 'read' THEN COALESCE(read_at, ${at}) ELSE read_at END
          FROM current
          -- the row by its id, and its state from current (the latest, locked): a condition on
          -- messages.status here would let the planner find the row through a partial index of
          -- that state, and with statistics that saw few queued messages it walked all of them
          -- (bench/RESULTS.md 11d, 11f)
          WHERE messages.id = ${id} AND messages.id = current.id AND current.status IN ${
        sql.in(MessageStateMachine.ALLOWED_FROM[to] as Array<string>)
      }
          ${
        // nothing leaves for the provider once its channel stopped dispatching (archived, ...)
        // and none leaves while one earlier in the dispatch order (`DispatchOrder`) is due: one
        // committed after the dispatcher read its batch (its wake-up raced this send slot) goes
        // first. One probe of `messages_queue` in queue order, in the same statement: `OFFSET 0`
        // keeps it a subplan run for this one row (without it the planner turns NOT EXISTS into an
        // anti join, and with the timelock clause it chose a hash join over every queued message),
        // and `ORDER BY ... LIMIT 1` makes the ordered index scan its plan (a sequential scan
        // looked cheaper to it when most queued rows are one channel's). bench/RESULTS.md 1, "A
        // dispatch take that read the whole queue". `messages_queue` is the only index such a probe
        // can use (migration 0120), so statistics that saw the queue nearly empty no longer send it
        // through every queued message of the channel, or of every channel (11d, 11f).
        to === "dispatching"
          ? sql`AND EXISTS (SELECT 1 FROM channels c WHERE c.id = messages.channel_id AND c.status = 'connected')
            AND NOT EXISTS (SELECT 1 FROM messages o WHERE ${
            DispatchOrder.due(sql, "o", sql`messages.channel_id`, at, waiting)
          }
              AND (${DispatchOrder.key(sql, "o")}) < (${DispatchOrder.key(sql, "messages")})
              ORDER BY ${DispatchOrder.key(sql, "o")} LIMIT 1 OFFSET 0)`
          : sql``}
          RETURNING messages.id, messages.status, messages.attempts, messages.workspace_id, messages.category,
            messages.failure, messages.channel_id, current.status AS from_state
        ), timeline AS (
          INSERT INTO message_transitions (message_id, from_state, to_state, reason, at)
          SELECT id, from_state, ${to}, ${options.reason ?? null}, ${at} FROM moved
        )${outbox === undefined ? sql`` : sql`, ${outbox}`}
        SELECT moved.id, moved.status, moved.from_state, moved.attempts, moved.workspace_id, moved.category,
          moved.failure, (SELECT c.provider FROM channels c WHERE c.id = moved.channel_id) AS provider${
        outbox === undefined ? sql`` : sql`, ${events.outboxWoken} AS woken`
      } FROM moved`
      const row = rows[0]
      if (row === undefined) return Option.none<Transitioned>()
      if (eventType !== undefined && !inStatement) {
        const movedId = yield* decodeMessageId(row.id)
        const event = Events.messageStatusEvent(to, {
          object: "message",
          object_id: movedId,
          message_id: movedId,
          from_state: row.from_state,
          category: row.category,
          ...(to === "failed_permanent" && row.failure
            ? { failure_class: row.failure.class, error_code: row.failure.code, reason: row.failure.reason }
            : {})
        })
        if (event) yield* events.append({ workspaceId: row.workspace_id, event, occurredAt: at })
      }
      return Option.some(toTransitioned(row))
    }, dieOnDatabaseError)

    /**
     * Receipts of several messages in ONE statement (a provider reports them in batches), and the
     * provider's acceptances (`provider_accepted`, the step before them on the same track): each
     * row guarded like `transition` (row lock, allowed from-state, never back), with its timeline
     * row and (receipts) status event and webhook fan-out. A message appears at most once
     * (`MessageMoves` splits a batch into rounds). Answers the moves that happened.
     */
    const receipts = Effect.fn("MessagesRepo.receipts")(function*(
      batch: ReadonlyArray<{ readonly id: string; readonly to: ReceiptTrackStatus; readonly at: string }>
    ) {
      if (batch.length === 0) return []
      const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
      const eventIds: Array<string> = []
      const parts: Array<Array<string>> = [[], [], [], []]
      for (const r of batch) {
        // an acceptance reports no event of its own (`STATUS_EVENT`)
        if (r.to === "provider_accepted") {
          eventIds.push("")
          parts.forEach((part) => part.push(""))
          continue
        }
        const eventId = yield* Ids.newId("evt")
        // hot path: no decode per receipt (bench/RESULTS.md 1 "Before and after number protection and the structure step")
        const messageId = r.id as Messaging.Message["id"]
        eventIds.push(eventId)
        const template = envelopeTemplate({
          id: eventId,
          createdAt: r.at,
          workspaceId: PLACEHOLDER_WORKSPACE,
          open: RECEIPT_SLOTS,
          event: Events.messageStatusEvent(r.to, {
            object: "message",
            object_id: messageId,
            message_id: messageId,
            from_state: "queued",
            category: "utility"
          })!
        })
        if (template.slots.join() !== RECEIPT_SLOTS.join()) return yield* Effect.dieMessage("unexpected envelope")
        template.parts.forEach((part, i) => parts[i]!.push(part))
      }
      const rows = yield* sql<MovedRow>`WITH input AS (
          SELECT * FROM unnest(${batch.map((r) => r.id)}::text[], ${batch.map((r) => r.to)}::text[],
            ${batch.map((r) => r.at)}::timestamptz[], ${eventIds}::text[], ${parts[0]!}::text[], ${parts[1]!}::text[],
            ${parts[2]!}::text[], ${parts[3]!}::text[]) AS i(id, to_state, at, event_id, p0, p1, p2, p3)
        ), current AS (
          SELECT m.id, m.status FROM messages m WHERE m.id = ANY(${batch.map((r) => r.id)}::text[]) ORDER BY m.id
          FOR UPDATE
        ), moved AS (
          UPDATE messages SET
            status = i.to_state,
            updated_at = ${now},
            next_attempt_at = NULL,
            sent_at = CASE WHEN i.to_state IN ('sent', 'delivered', 'read') THEN COALESCE(messages.sent_at, i.at)
              ELSE messages.sent_at END,
            delivered_at = CASE WHEN i.to_state IN ('delivered', 'read') THEN COALESCE(messages.delivered_at, i.at)
              ELSE messages.delivered_at END,
            read_at = CASE WHEN i.to_state = 'read' THEN COALESCE(messages.read_at, i.at) ELSE messages.read_at END
          FROM current c JOIN input i ON i.id = c.id
          WHERE messages.id = c.id AND messages.id = ANY(${batch.map((r) => r.id)}::text[])
            AND array_position(${RECEIPT_TRACK}::text[], c.status::text) < array_position(${RECEIPT_TRACK}::text[], i.to_state)
            AND messages.status = c.status
          RETURNING messages.id, messages.status, messages.attempts, messages.workspace_id, messages.category,
            messages.channel_id, c.status AS from_state, i.at, i.event_id, i.p0, i.p1, i.p2, i.p3
        ), timeline AS (
          INSERT INTO message_transitions (message_id, from_state, to_state, reason, at)
          SELECT id, from_state, status, NULL, at FROM moved
        ), ${
        events.outboxCtes(sql`SELECT event_id AS id, workspace_id, 'message.' || status AS type, id AS object_id,
            p0 || to_json(workspace_id)::text || p1 || to_json(from_state)::text || p2 || to_json(category)::text || p3
              AS envelope, at AS created_at
            FROM moved WHERE status <> 'provider_accepted'`)
      }
        SELECT moved.id, moved.status, moved.from_state, moved.attempts, moved.workspace_id, moved.category,
          NULL AS failure, (SELECT c.provider FROM channels c WHERE c.id = moved.channel_id) AS provider,
          ${events.outboxWoken} AS woken
        FROM moved`
      return rows.map(toTransitioned)
    }, dieOnDatabaseError)

    /**
     * Takes several channels' messages for dispatch in ONE statement (`-> dispatching`, each in the
     * send slot at its `at`): each row guarded exactly like `transition`'s move to `dispatching`
     * (its shard lease still held, row lock, still `queued`, its channel connected, no message
     * earlier in the dispatch order due on its channel, recipients in `waiting` passed over), with
     * its timeline row. At most one message per channel (a channel dispatches one at a time).
     * Answers the moves that happened.
     */
    const takeForDispatch = Effect.fn("MessagesRepo.takeForDispatch")(function*(
      batch: ReadonlyArray<{
        readonly id: string
        readonly at: string
        readonly waiting: ReadonlyArray<string>
        readonly lease: ShardLease | undefined
      }>
    ) {
      if (batch.length === 0) return []
      const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
      const ids = batch.map((r) => r.id)
      const rows = yield* sql<MovedRow>`WITH input AS (
          SELECT * FROM unnest(${ids}::text[], ${batch.map((r) => r.at)}::timestamptz[],
            ${batch.map((r) => DispatchOrder.joinWaiting(r.waiting))}::text[],
            ${batch.map((r) => r.lease?.shardId ?? null)}::text[], ${
        batch.map((r) => r.lease?.address ?? null)
      }::text[],
            ${batch.map((r) => r.lease?.expirySeconds ?? null)}::int[])
            AS i(id, at, waiting, shard_id, address, expiry)
        ), current AS (
          SELECT m.id, m.status FROM messages m JOIN input i ON i.id = m.id
          WHERE m.id = ANY(${ids}::text[])${
        batch.some((r) => r.lease !== undefined)
          ? sql` AND (i.shard_id IS NULL OR ${
            leaseHeld(sql, { shardId: sql`i.shard_id`, address: sql`i.address`, expirySeconds: sql`i.expiry` })
          })`
          : sql``
      }
          ORDER BY m.id FOR UPDATE OF m
        ), moved AS (
          UPDATE messages SET status = 'dispatching', updated_at = ${now}, next_attempt_at = NULL
          FROM current c JOIN input i ON i.id = c.id
          -- by id, the state from current (locked): as in transition, no condition on
          -- messages.status that a partial index of queued messages could be walked for
          WHERE messages.id = c.id AND messages.id = ANY(${ids}::text[]) AND c.status = 'queued'
            AND EXISTS (SELECT 1 FROM channels ch WHERE ch.id = messages.channel_id AND ch.status = 'connected')
            AND NOT EXISTS (SELECT 1 FROM messages o WHERE ${
        DispatchOrder.due(
          sql,
          "o",
          sql`messages.channel_id`,
          sql`i.at`,
          DispatchOrder.notWaitingColumn(sql, "o", "i.waiting")
        )
      }
              AND (${DispatchOrder.key(sql, "o")}) < (${DispatchOrder.key(sql, "messages")})
              ORDER BY ${DispatchOrder.key(sql, "o")} LIMIT 1 OFFSET 0)
          RETURNING messages.id, messages.status, messages.attempts, messages.workspace_id, messages.category,
            messages.failure, messages.channel_id, c.status AS from_state, i.at
        ), timeline AS (
          INSERT INTO message_transitions (message_id, from_state, to_state, reason, at)
          SELECT id, from_state, 'dispatching', NULL, at FROM moved
        )
        SELECT moved.id, moved.status, moved.from_state, moved.attempts, moved.workspace_id, moved.category,
          moved.failure, (SELECT c.provider FROM channels c WHERE c.id = moved.channel_id) AS provider
        FROM moved`
      return rows.map(toTransitioned)
    }, dieOnDatabaseError)

    /**
     * Moves a message to `to` when its current state allows it; otherwise does nothing (a late
     * or repeated report). Returns the updated message when it moved. One statement, atomic on
     * its own (no transaction needed), except a move to `failed_permanent` without a `failure`,
     * whose event reads the row's: that one runs in a transaction of its own (a savepoint inside
     * the caller's).
     */
    const transition = (id: string, to: MessageStateMachine.MessageStatus, options: TransitionOptions = {}) =>
      to === "failed_permanent" && options.failure === undefined
        ? dieOnDatabaseError(sql.withTransaction(moveOnce(id, to, options)))
        : moveOnce(id, to, options)

    const timelineOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: TransitionRow,
      execute: (id) =>
        sql`SELECT from_state, to_state, at, reason FROM message_transitions WHERE message_id = ${id} ORDER BY id`
    })

    /**
     * The business read the conversation's inbound messages up to `upTo` (a `created_at`): those
     * not marked yet get `read_at`; answers them (the provider's ids, to send the read receipts),
     * none when they all were (a repeated call sends nothing twice).
     */
    const markInboundRead = Effect.fn("MessagesRepo.markInboundRead")(function*(input: {
      readonly conversationId: string
      readonly upTo: string | null
      readonly now: string
    }) {
      return yield* sql<{
        id: string
        provider_message_id: string | null
        from_number: string | null
        sender_lid: string | null
      }>`UPDATE messages SET read_at = ${input.now}, updated_at = ${input.now}
        WHERE conversation_id = ${input.conversationId} AND direction = 'inbound' AND read_at IS NULL
          ${input.upTo === null ? sql`` : sql`AND created_at <= ${input.upTo}`}
        RETURNING id, provider_message_id, from_number, sender_lid`
    }, dieOnDatabaseError)

    const find = Effect.fn("MessagesRepo.find")(function*(workspaceId: string, id: string) {
      const rows = yield* decodeMessages(
        yield* sql`SELECT * FROM messages WHERE workspace_id = ${workspaceId} AND id = ${id}`
      )
      if (!rows[0]) return Option.none<Messaging.MessageWithTimeline>()
      return Option.some(new Messaging.MessageWithTimeline({ ...rows[0], timeline: yield* timelineOf(id) }))
    }, dieOnDatabaseError)

    /** Any workspace, for entities. */
    const findById = Effect.fn("MessagesRepo.findById")(function*(id: string) {
      const rows = yield* decodeMessages(yield* sql`SELECT * FROM messages WHERE id = ${id}`)
      return Option.fromNullable(rows[0])
    }, dieOnDatabaseError)

    const list = Effect.fn("MessagesRepo.list")(function*(
      workspaceId: string,
      filters: MessageFilters,
      limit: number,
      after: Pagination.CursorPosition | undefined
    ) {
      const rows = yield* sql`SELECT * FROM messages WHERE workspace_id = ${workspaceId}
        ${filters.status ? sql`AND status = ${filters.status}` : sql``}
        ${filters.direction ? sql`AND direction = ${filters.direction}` : sql``}
        ${filters.category ? sql`AND category = ${filters.category}` : sql``}
        ${filters.channelId ? sql`AND channel_id = ${filters.channelId}` : sql``}
        ${filters.conversationId ? sql`AND conversation_id = ${filters.conversationId}` : sql``}
        ${after ? sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
      return yield* decodeMessages(rows)
    }, dieOnDatabaseError)

    /** Whether the channel recorded this provider's message already (an inbound message heard twice). */
    const hasProviderMessage = Effect.fn("MessagesRepo.hasProviderMessage")(
      function*(channelId: string, providerMessageId: string) {
        const seen = yield* sql`SELECT 1 FROM messages
        WHERE channel_id = ${channelId} AND provider_message_id = ${providerMessageId}`
        return seen.length > 0
      },
      dieOnDatabaseError
    )

    /**
     * An inbound message recorded before its content reached the device (`unsupported` of one of
     * `MessageContent.AWAITING_CONTENT_KINDS`) takes the content now heard under its provider id,
     * in place: one statement that checks and writes. `None` when there is no such message (the
     * message was complete already: a repeated report).
     */
    const completeAwaiting = Effect.fn("MessagesRepo.completeAwaiting")(function*(input: {
      readonly channelId: string
      readonly providerMessageId: string
      readonly type: MessageContent.MessageType
      readonly body: string
      readonly content: Messaging.MessageMemberValue | undefined
      readonly replyTo: string | null
      readonly mediaId: string | null
      readonly now: string
    }) {
      const rows = yield* sql`UPDATE messages SET type = ${input.type}, body = ${input.body},
          content = ${input.content === undefined ? null : JSON.stringify(input.content)}::jsonb,
          reply_to = ${input.replyTo}, media_id = ${input.mediaId},
          media_status = ${input.mediaId === null ? null : "pending"}, updated_at = ${input.now}
        WHERE channel_id = ${input.channelId} AND provider_message_id = ${input.providerMessageId}
          AND direction = 'inbound' AND type = 'unsupported'
          AND content->>'kind' IN ${sql.in(MessageContent.AWAITING_CONTENT_KINDS)}
        RETURNING *`
      return Option.fromNullable((yield* decodeMessages(rows))[0])
    }, dieOnDatabaseError)

    /**
     * Our id of a message of the channel the provider knows by `providerMessageId`: an inbound one
     * (its provider id) or one of ours (our id is the provider's id: `ChannelProvider.send`).
     */
    const idForProviderMessage = Effect.fn("MessagesRepo.idForProviderMessage")(
      function*(channelId: string, providerMessageId: string) {
        const rows = yield* sql<{ id: string }>`SELECT id FROM messages WHERE channel_id = ${channelId}
          AND (provider_message_id = ${providerMessageId} OR id = ${providerMessageId}) LIMIT 1`
        return rows[0]?.id ?? null
      },
      dieOnDatabaseError
    )

    /**
     * The message's media reached its end (`ready` with size and hash, or `failed`): the message
     * shows it (its member's `size_bytes`/`sha256`, `media.status`). Answers the message.
     */
    const mediaSettled = Effect.fn("MessagesRepo.mediaSettled")(function*(input: {
      readonly mediaId: string
      readonly status: "ready" | "failed" | "expired"
      readonly failure: string | null
      readonly sizeBytes: number | null
      readonly sha256: string | null
      readonly now: string
    }) {
      const rows = yield* sql`UPDATE messages SET media_status = ${input.status},
          media_failure = ${input.failure}, updated_at = ${input.now},
          content = CASE WHEN ${input.sizeBytes !== null} THEN content
            || jsonb_build_object('size_bytes', ${input.sizeBytes}::bigint, 'sha256', ${input.sha256}::text)
            ELSE content END
        WHERE media_id = ${input.mediaId} RETURNING *`
      return yield* decodeMessages(rows)
    }, dieOnDatabaseError)

    return {
      insert,
      completeAwaiting,
      idForProviderMessage,
      mediaSettled,
      appendQueuedEvent,
      transition,
      takeForDispatch,
      receipts,
      find,
      markInboundRead,
      findById,
      list,
      hasProviderMessage
    } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
