/**
 * The dispatch queue: a `queued` message row is a queue entry. What the Channel entity reads to
 * dispatch and what the message sweeper reads to repair lost wake-ups, dead dispatchers and
 * overdue receipts, and the dispatch-order rule (`DispatchOrder`). Reads only: a message's status changes through `MessagesRepo.transition` /
 * `MessagesRepo.receipts` (the writer rule: docs/ARCHITECTURE.md "One writer per message, by statement").
 * Over 350 lines on purpose: the queue's reads share one row mapping (the outgoing body, the quoted
 * and reacted messages, a group chat member among them) and the dispatch-order rule.
 */
import { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { MessageCategory, type MessageContent, Schemas } from "@switchboard/domain"
import { Clock, Effect } from "effect"
import { idBound, idsFrom, queuedWindow } from "./Partitions.js"
import { dieOnDatabaseError } from "./Rows.js"
import {
  decodeBacklog,
  decodeChannelIds,
  decodeDispatches,
  decodeHeads,
  decodeIds,
  decodeQueued,
  decodeStuck,
  outgoingBody,
  ref
} from "./rows/QueueRows.js"

export interface QueuedMessage {
  readonly id: string
  readonly to: string
  readonly body: string
  readonly attempts: number
  readonly category: MessageCategory.Category
  /** what the provider sends: the text (`body`), a stored file, a location, a reaction */
  readonly content: MessageContent.OutgoingBody
  /** the message this one quotes (`reply_to`), by the provider's id */
  readonly quoted: MessageContent.ProviderMessageRef | null
}

/**
 * The dispatch-order rule, in one place: a channel's `queued` messages go by priority, then age,
 * then id (the `messages_queue` index), each once it is due (its retry delay, `next_attempt_at`,
 * has passed); recipients in `waiting` (QR spacing) are passed over. `nextQueued` reads in this
 * order and `MessagesRepo.transition` refuses `-> dispatching` while one earlier in it is due.
 * `m` is the alias of the `messages` row.
 */
export const DispatchOrder = {
  /** the order, as an `ORDER BY` list or a row value to compare */
  key: (sql: SqlClient.SqlClient, m: string) => sql.literal(`${m}.priority, ${m}.created_at, ${m}.id`),
  /**
   * `m` is a due queued message of `channel`, not to a waiting recipient, and not held: while
   * WhatsApp holds a reach-out timelock on the channel's number, messages to contacts who never
   * wrote to it stay queued (neither sent nor failed) until it ends; replies and group chat
   * messages go (docs/LIMITS.md, "Number protection"). `window`: the ids of the messages that may
   * still be queued (`Partitions.queuedWindow`), so the statement reads only the partitions of the
   * last day.
   */
  due: (
    sql: SqlClient.SqlClient,
    m: string,
    channel: Statement.Fragment,
    at: string | Statement.Fragment,
    waiting: ReadonlyArray<string> | Statement.Fragment,
    window: { readonly lower: string; readonly upper: string }
  ) =>
    sql`${sql.literal(m)}.channel_id = ${channel} AND ${sql.literal(m)}.status = 'queued'
      AND ${sql.literal(m)}.id >= ${idBound(sql, window.lower)} AND ${sql.literal(m)}.id < ${idBound(sql, window.upper)}
      AND (${sql.literal(m)}.next_attempt_at IS NULL OR ${sql.literal(m)}.next_attempt_at <= ${at})
      AND NOT (COALESCE((SELECT tl.qr_timelock_until > ${at} FROM channels tl WHERE tl.id = ${channel}), false)
        AND NOT EXISTS (SELECT 1 FROM conversations cv WHERE cv.id = ${sql.literal(m)}.conversation_id
          AND (cv.last_inbound_at IS NOT NULL OR cv.group_chat_id IS NOT NULL)))${
      !Array.isArray(waiting)
        ? sql` AND ${waiting as Statement.Fragment}`
        : waiting.length > 0
        ? sql` AND ${sql.literal(m)}.to_number NOT IN ${sql.in(waiting as ReadonlyArray<string>)}`
        : sql``
    }`,
  /**
   * `waiting` for a statement that takes many rows at once (`MessagesRepo.takeForDispatch`): the
   * recipients are a column, `separator`-joined (NULL for none).
   */
  notWaitingColumn: (sql: SqlClient.SqlClient, m: string, column: string) =>
    sql`(${sql.literal(column)} IS NULL
      OR ${sql.literal(m)}.to_number <> ALL (string_to_array(${sql.literal(column)}, chr(31))))`,
  /** joins a row's waiting recipients for `notWaitingColumn` (numbers hold no unit separator) */
  joinWaiting: (waiting: ReadonlyArray<string>): string | null => waiting.length === 0 ? null : waiting.join("\x1f")
}

/**
 * `AND` `column` (a message id) of a message made at `madeSince` (epoch ms) or later, to the day (a
 * day of clock slack: `Partitions.idsFrom`), so the statement reads only the months since; every
 * month when `madeSince` is undefined. The sweeps take it from the sweeper (`MessageSweeper`): a
 * message not settled yet is at most a day old once a sweep has read every month.
 */
const madeSinceOf = (sql: SqlClient.SqlClient, column: string, madeSince: number | undefined) =>
  madeSince === undefined ? sql`` : sql`AND ${idsFrom(sql, "msg", column, madeSince)}`

export class DispatchQueueRepo extends Effect.Service<DispatchQueueRepo>()("@switchboard/db/DispatchQueueRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Due queued messages in dispatch order; `skipRecipients`: recipients that must wait (QR spacing).
     * Messages a reach-out timelock holds are not due (`DispatchOrder.due`).
     */
    const nextQueued = Effect.fn("DispatchQueueRepo.nextQueued")(function*(
      channelId: string,
      limit: number,
      skipRecipients: ReadonlyArray<string> = []
    ) {
      const millis = yield* Clock.currentTimeMillis
      const now = Schemas.toTimestamp(millis)
      // read on every dispatch: the columns the send needs, decoded; a suspended workspace's
      // channels hold their queue (the workspace check is evaluated once per call)
      const rows = yield* decodeQueued(
        yield* sql`SELECT m.id, m.to_number, m.body, m.attempts, m.category, m.type,
          m.content, m.media_id, md.kind AS media_kind, md.mime_type, md.size_bytes, md.filename,
          q.id AS q_id, q.provider_message_id AS q_pid, q.direction AS q_direction, q.body AS q_body,
          CASE WHEN q.group_chat_id IS NOT NULL AND q.direction = 'inbound'
            THEN COALESCE(q.from_number, q.sender_lid || '@lid') END AS q_participant,
          r.id AS r_id, r.provider_message_id AS r_pid, r.direction AS r_direction, r.body AS r_body,
          CASE WHEN r.group_chat_id IS NOT NULL AND r.direction = 'inbound'
            THEN COALESCE(r.from_number, r.sender_lid || '@lid') END AS r_participant
        FROM messages m
        LEFT JOIN media md ON md.id = m.media_id
        -- the quoted and the reacted-to message each by its id, per row (OFFSET 0 keeps each a
        -- lookup the row's id prunes to one partition; as joins, a generic plan read every month)
        LEFT JOIN LATERAL (SELECT q.id, q.provider_message_id, q.direction, q.body, q.group_chat_id,
          q.from_number, q.sender_lid FROM messages q
          WHERE q.id = m.reply_to OFFSET 0) q ON true
        LEFT JOIN LATERAL (SELECT r.id, r.provider_message_id, r.direction, r.body, r.group_chat_id,
          r.from_number, r.sender_lid FROM messages r
          WHERE m.type = 'reaction' AND r.id = m.content ->> 'message_id' OFFSET 0) r ON true
        WHERE ${DispatchOrder.due(sql, "m", sql`${channelId}`, now, skipRecipients, queuedWindow(millis))}
        AND (SELECT w.status FROM channels c JOIN workspaces w ON w.id = c.workspace_id WHERE c.id = ${channelId})
          = 'active'
        ORDER BY ${DispatchOrder.key(sql, "m")} LIMIT ${limit}`
      )
      return rows.map((r): QueuedMessage => ({
        id: r.id,
        to: r.to_number,
        body: r.body,
        attempts: r.attempts,
        category: r.category,
        content: outgoingBody(r),
        quoted: ref(r, "q")
      }))
    }, dieOnDatabaseError)

    /** Recipients and times of the channel's dispatches since `since` (epoch ms): QR per-recipient spacing. */
    const dispatchesSince = Effect.fn("DispatchQueueRepo.dispatchesSince")(function*(channelId: string, since: number) {
      // a message is dispatched within a day of being made (it expires then): the ids of the
      // messages queued at `since` or later
      const lower = queuedWindow(since).lower
      const upper = queuedWindow(yield* Clock.currentTimeMillis).upper
      const rows = yield* decodeDispatches(
        yield* sql`SELECT m.to_number, t.at
        FROM message_transitions t JOIN messages m ON m.id = t.message_id
        WHERE m.channel_id = ${channelId} AND m.direction = 'outbound' AND t.to_state = 'dispatching'
          AND t.at > ${Schemas.toTimestamp(since)}
          AND t.message_id >= ${idBound(sql, lower)} AND t.message_id < ${idBound(sql, upper)}
          AND m.id >= ${idBound(sql, lower)} AND m.id < ${idBound(sql, upper)}`
      )
      return rows.map((r) => ({ to: r.to_number, at: new Date(r.at).getTime() }))
    }, dieOnDatabaseError)

    /**
     * Connected channels with due queued messages, each with its `head`: the id of its first due
     * message in dispatch order (the sweeper wakes a channel whose head has not moved since its
     * last look: `MessageSweeper`). In id order after `after`: the sweeper pages through them
     * (starting again from the first once a page comes back short), so with more than `limit` such
     * channels every one is still reached.
     */
    const channelsWithDueWork = Effect.fn("DispatchQueueRepo.channelsWithDueWork")(
      function*(limit: number, after = "") {
        const millis = yield* Clock.currentTimeMillis
        const now = Schemas.toTimestamp(millis)
        const window = queuedWindow(millis)
        // only channels that can dispatch (a disconnected channel's, or a suspended workspace's,
        // backlog waits or expires quietly); per connected channel, a walk of the head of
        // `messages_queue` to its first due message (only retries waiting for their backoff stand
        // before it). The `LIMIT` keeps it a probe per channel: as a semi-join the planner read
        // every queued message of every channel each second (784 pages a call at 1M rows,
        // bench/RESULTS.md 11g)
        const rows = yield* decodeHeads(
          yield* sql`SELECT c.id, h.id AS head FROM channels c
        CROSS JOIN LATERAL (SELECT m.id FROM messages m WHERE m.channel_id = c.id AND m.status = 'queued'
          AND m.id >= ${idBound(sql, window.lower)} AND m.id < ${idBound(sql, window.upper)}
          AND COALESCE(m.next_attempt_at, '-infinity'::timestamptz) <= ${now}
          ORDER BY ${DispatchOrder.key(sql, "m")} LIMIT 1) h
        WHERE c.status = 'connected' AND c.id > ${after}
        AND EXISTS (SELECT 1 FROM workspaces w WHERE w.id = c.workspace_id AND w.status = 'active')
        ORDER BY c.id LIMIT ${limit}`
        )
        return rows.map((r) => ({ channelId: r.id, head: r.head }))
      },
      dieOnDatabaseError
    )

    /**
     * Ids of messages queued (or waiting for a retry) before `cutoff`; only those made since
     * `madeSince` (epoch ms) when given (`madeSinceOf`).
     */
    const staleQueued = Effect.fn("DispatchQueueRepo.staleQueued")(function*(
      cutoff: string,
      limit: number,
      madeSince?: number
    ) {
      const rows = yield* decodeIds(
        yield* sql`SELECT id FROM messages
        WHERE status IN ('queued', 'failed_retryable') AND created_at < ${cutoff}
          ${madeSinceOf(sql, "id", madeSince)} LIMIT ${limit}`
      )
      return rows.map((r) => r.id)
    }, dieOnDatabaseError)

    /**
     * Messages left in `dispatching` (their dispatcher died) since before `cutoff`; only those made
     * since `madeSince` (epoch ms) when given (`madeSinceOf`).
     */
    const stuckDispatching = Effect.fn("DispatchQueueRepo.stuckDispatching")(function*(
      cutoff: string,
      limit: number,
      madeSince?: number
    ) {
      return yield* decodeStuck(
        yield* sql`SELECT id, attempts FROM messages
        WHERE status = 'dispatching' AND updated_at < ${cutoff}
          ${madeSinceOf(sql, "id", madeSince)} LIMIT ${limit}`
      )
    }, dieOnDatabaseError)

    /**
     * Messages the provider took and never acknowledged since `cutoff` (`PROVIDER_ACK_TIMEOUT_MS`);
     * the partial index `messages_in_flight` serves it. Only those made since `madeSince` (epoch
     * ms) when given (`madeSinceOf`).
     */
    const unacknowledged = Effect.fn("DispatchQueueRepo.unacknowledged")(function*(
      cutoff: string,
      limit: number,
      madeSince?: number
    ) {
      const rows = yield* decodeIds(
        yield* sql`SELECT id FROM messages
        WHERE status = 'provider_accepted' AND updated_at < ${cutoff}
          ${madeSinceOf(sql, "id", madeSince)} LIMIT ${limit}`
      )
      return rows.map((r) => r.id)
    }, dieOnDatabaseError)

    /**
     * Ids of a channel's messages that have not been dispatched and still could be (a channel
     * archived cancels them): those of the queue's window (`Partitions.queuedWindow`, the
     * partitions of the last two days), the only ones `nextQueued` and the dispatch take ever read.
     * An older one still queued (no sweeper ran since it expired) is never dispatched; the
     * sweeper cancels it (`undispatchedOfArchived`, whose first sweep reads every month) or
     * expires it.
     */
    const undispatchedOf = Effect.fn("DispatchQueueRepo.undispatchedOf")(function*(channelId: string) {
      const window = queuedWindow(yield* Clock.currentTimeMillis)
      const rows = yield* decodeIds(
        yield* sql`SELECT id FROM messages
        WHERE channel_id = ${channelId} AND status IN ('queued', 'failed_retryable')
          AND id >= ${idBound(sql, window.lower)} AND id < ${idBound(sql, window.upper)}`
      )
      return rows.map((r) => r.id)
    }, dieOnDatabaseError)

    /**
     * Undispatched messages of archived channels (their cancellation was lost); only those made
     * since `madeSince` (epoch ms) when given (`madeSinceOf`).
     */
    const undispatchedOfArchived = Effect.fn("DispatchQueueRepo.undispatchedOfArchived")(function*(
      limit: number,
      madeSince?: number
    ) {
      // `failed_retryable` never outlives its transaction (DispatchFailed re-queues in the same one)
      const rows = yield* decodeIds(
        yield* sql`SELECT m.id FROM channels c JOIN messages m ON m.channel_id = c.id
        WHERE c.status = 'archived' AND m.status = 'queued' ${madeSinceOf(sql, "m.id", madeSince)}
        LIMIT ${limit}`
      )
      return rows.map((r) => r.id)
    }, dieOnDatabaseError)

    /**
     * Channels whose outbound messages wait for a receipt that is overdue: accepted by the provider
     * but not reported `sent`, or `sent` / `delivered` but not on to `read`, since before
     * `overdueBefore`. The connection that would report them went away (a runner died with the
     * receipt timers in its memory); a woken channel that is not active reconnects, and a reconnect
     * hears what is still under way. `provider_accepted` counts after `acceptedAfter`; `sent` and
     * `delivered` only after `laterStagesAfter` (a recipient may never read: the repair is tried for
     * a while, not forever).
     */
    const channelsAwaitingReceipts = Effect.fn("DispatchQueueRepo.channelsAwaitingReceipts")(
      function*(input: {
        readonly overdueBefore: string
        readonly acceptedAfter: string
        readonly laterStagesAfter: string
        readonly limit: number
        /** paging like `channelsWithDueWork`: channel ids after this one, in order */
        readonly after?: string
        /** only messages made since then (epoch ms; `madeSinceOf`), or every month */
        readonly madeSince?: number | undefined
      }) {
        const rows = yield* decodeChannelIds(
          yield* sql`SELECT channel_id FROM (
            SELECT channel_id FROM messages
              WHERE status = 'provider_accepted' AND updated_at < ${input.overdueBefore}
                AND updated_at > ${input.acceptedAfter} ${madeSinceOf(sql, "id", input.madeSince)}
            UNION
            SELECT channel_id FROM messages
              WHERE direction = 'outbound' AND status IN ('sent', 'delivered') AND updated_at < ${input.overdueBefore}
                AND updated_at > ${input.laterStagesAfter} ${madeSinceOf(sql, "id", input.madeSince)}
          ) overdue WHERE channel_id > ${input.after ?? ""}
          ORDER BY channel_id LIMIT ${input.limit}`
        )
        return rows.map((r) => r.channel_id)
      },
      dieOnDatabaseError
    )

    /**
     * Connected channels (of active workspaces) with queued messages: how many wait and since when
     * the oldest (metrics' dispatch lag). Counts come from `channel_queue_counts`; the oldest is one
     * index probe per priority on `messages_queue`, so a deep backlog costs no more than a short one.
     */
    const backlog = Effect.fn("DispatchQueueRepo.backlog")(function*() {
      const priorities = [...new Set(Object.values(MessageCategory.PRIORITY))]
      // the partitions of the messages that may still be queued: one ordered probe per priority
      // (an empty month's partition in the plan made it sort a channel's whole queue)
      const window = queuedWindow(yield* Clock.currentTimeMillis)
      const rows = yield* decodeBacklog(
        yield* sql`SELECT q.channel_id, q.queued, o.oldest FROM (
          SELECT channel_id, sum(queued) AS queued FROM channel_queue_counts GROUP BY channel_id HAVING sum(queued) > 0
        ) q
        JOIN channels c ON c.id = q.channel_id AND c.status = 'connected'
        JOIN workspaces w ON w.id = c.workspace_id AND w.status = 'active'
        CROSS JOIN LATERAL (
          SELECT min(f.created_at) AS oldest FROM unnest(${`{${priorities.join(",")}}`}::smallint[]) p(priority)
          CROSS JOIN LATERAL (
            SELECT m.created_at FROM messages m
            WHERE m.channel_id = q.channel_id AND m.status = 'queued' AND m.priority = p.priority
              AND m.id >= ${idBound(sql, window.lower)} AND m.id < ${idBound(sql, window.upper)}
            ORDER BY m.created_at LIMIT 1
          ) f
        ) o`
      )
      return rows.flatMap((r) =>
        r.oldest === null
          ? []
          : [{ channelId: r.channel_id, queued: r.queued, oldest: new Date(r.oldest).getTime() }]
      )
    }, dieOnDatabaseError)

    return {
      backlog,
      nextQueued,
      dispatchesSince,
      channelsWithDueWork,
      staleQueued,
      stuckDispatching,
      unacknowledged,
      undispatchedOf,
      undispatchedOfArchived,
      channelsAwaitingReceipts
    } as const
  })
}) {}
