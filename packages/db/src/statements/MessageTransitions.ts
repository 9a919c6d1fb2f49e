/**
 * The guarded moves of a message's status, each ONE statement: `transition` (row lock, allowed
 * from-state check, update, timeline row, status event and webhook fan-out; atomic without a
 * transaction), `receipts` (a provider's batch of receipts and acceptances) and `takeForDispatch`
 * (several channels' messages `-> dispatching`). The move and the batch of receipts keep their
 * statements side by side, with the envelope templates that complete their events, so that the
 * two stay the same rule. `MessagesRepo` exposes them.
 * Over 350 lines on purpose: the three guarded moves side by side, so they stay one rule.
 */
import type { SqlClient } from "@effect/sql"
import { Events, Ids, MessageStateMachine, type Messaging, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option, Schema } from "effect"
import { DispatchOrder } from "../DispatchQueueRepo.js"
import { envelopeTemplate, type EventsRepo } from "../EventsRepo.js"
import { idRange, queuedWindow } from "../Partitions.js"
import { dieOnDatabaseError } from "../Rows.js"
import { type MovedRow, toTransitioned, type Transitioned } from "../rows/MessageRows.js"
import { leaseHeld, type ShardLease } from "../ShardLease.js"

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

const decodeMessageId = Schema.decodeUnknown(Ids.Id("msg"))

const isMessageId = Ids.isId("msg")

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

/** The moves on the client `sql`, their events written through `events` (the repo's own). */
export const makeMessageTransitions = (sql: SqlClient.SqlClient, events: EventsRepo) => {
  /** `transition`'s statement (and, a failure read from the row, its event). */
  const moveOnce = Effect.fn("MessagesRepo.transition")(function*(
    id: string,
    to: MessageStateMachine.MessageStatus,
    options: TransitionOptions = {}
  ) {
    const millis = yield* Clock.currentTimeMillis
    const now = Schemas.toTimestamp(millis)
    const at = options.occurredAt ?? now
    const waiting = options.waitingRecipients ?? []
    const failure = options.failure
    // the status event, when `to` reports one: written by the same statement, its envelope
    // completed there with what only the locked row knows (the state it came from, the
    // message's workspace and category). A failure read from the row (none given) takes the
    // two-statement way below.
    // (the id typed by a check, not a decode per move: bench/RESULTS.md 1 "Before and after number
    // protection and the structure step"; an id not of our form takes the two-statement way too)
    const eventType = MessageStateMachine.STATUS_EVENT[to]
    const messageId = isMessageId(id) ? id : undefined
    const inStatement = eventType !== undefined && (to !== "failed_permanent" || failure !== undefined) &&
      messageId !== undefined
    const eventId = inStatement ? yield* Ids.newId("evt") : undefined
    const outbox = inStatement && messageId !== undefined
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
      // dispatch take that read the whole queue". The channel's status: a subquery of the row (as
      // a join, a generic plan looked the message up once per connected channel). `messages_queue` is the only index such a probe
      // can use (migration 0120), so statistics that saw the queue nearly empty no longer send it
      // through every queued message of the channel, or of every channel (11d, 11f).
      to === "dispatching"
        ? sql`AND (SELECT c.status FROM channels c WHERE c.id = messages.channel_id) = 'connected'
            AND NOT EXISTS (SELECT 1 FROM messages o WHERE ${
          DispatchOrder.due(sql, "o", sql`messages.channel_id`, at, waiting, queuedWindow(millis))
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
    reported: ReadonlyArray<{ readonly id: string; readonly to: ReceiptTrackStatus; readonly at: string }>
  ) {
    // an id not of our form names none of our messages (a provider's report of one we did not
    // send): nothing to move. Typed by the check, not a decode per receipt (bench/RESULTS.md 1)
    const batch = reported.flatMap((r) => isMessageId(r.id) ? [{ ...r, id: r.id }] : [])
    if (batch.length === 0) return []
    const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
    // the batch's ids as a range too, so it reads their partitions (an array is not pruned)
    const [lowest, highest] = idRange(batch.map((r) => r.id))
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
      const messageId = r.id
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
          SELECT m.id, m.status FROM messages m WHERE m.id = ANY(${batch.map((r) => r.id)}::text[])
            AND m.id >= ${lowest} AND m.id <= ${highest} ORDER BY m.id
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
            AND messages.id >= ${lowest} AND messages.id <= ${highest}
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
    const millis = yield* Clock.currentTimeMillis
    const now = Schemas.toTimestamp(millis)
    const ids = batch.map((r) => r.id)
    const [lowest, highest] = idRange(ids)
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
          WHERE m.id = ANY(${ids}::text[]) AND m.id >= ${lowest} AND m.id <= ${highest}${
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
            AND messages.id >= ${lowest} AND messages.id <= ${highest}
            AND (SELECT ch.status FROM channels ch WHERE ch.id = messages.channel_id) = 'connected'
            AND NOT EXISTS (SELECT 1 FROM messages o WHERE ${
      DispatchOrder.due(
        sql,
        "o",
        sql`messages.channel_id`,
        sql`i.at`,
        DispatchOrder.notWaitingColumn(sql, "o", "i.waiting"),
        queuedWindow(millis)
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

  return { transition, takeForDispatch, receipts } as const
}
