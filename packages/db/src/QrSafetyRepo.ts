/**
 * QR safety: the operator caps that lower the platform cap, and the
 * per-channel count a QR send is judged on. `lockChannel` then `usage` inside the send
 * transaction: concurrent sends on one QR channel count one after the other.
 */
import { SqlClient } from "@effect/sql"
import { ChannelStateMachine } from "@switchboard/domain"
import { Clock, Effect, Option, Schema } from "effect"
import * as Partitions from "./Partitions.js"
import type { WarmUpFacts } from "./QrWarmUpRepo.js"
import { toWarmUpFacts, WarmUpFactsRow } from "./QrWarmUpRepo.js"
import { decodeRows, dieOnDatabaseError, TimestampColumn } from "./Rows.js"

/** What `QrSafetyRepo.health` reads: the warm-up's columns, the caps and the window's counts. */
const decodeHealth = decodeRows(Schema.Struct({
  ...WarmUpFactsRow.fields,
  workspace_limit: Schema.NullOr(Schema.Number),
  channel_limit: Schema.NullOr(Schema.Number),
  /** handed to WhatsApp in the window */
  sent: Schema.Number,
  /** accepted, not handed over yet */
  queued: Schema.Number,
  /** accepted in the window to contacts who never wrote to the channel */
  new_contacts: Schema.Number,
  /** accepted in the window to contacts who wrote to it */
  existing_contacts: Schema.Number,
  /** numbers WhatsApp answered as on it / not on it in the window */
  on_whatsapp: Schema.Number,
  not_on_whatsapp: Schema.Number,
  /** queued messages a reach-out timelock holds now */
  held: Schema.Number,
  last_signal: Schema.NullOr(ChannelStateMachine.QrRestrictionReason),
  last_signal_at: Schema.NullOr(TimestampColumn)
}))

/** `usage`'s rows: a send time each (`queued` null), then one row of the unsent count (`at` null). */
const decodeUsage = decodeRows(Schema.Struct({
  at: Schema.NullOr(TimestampColumn),
  queued: Schema.NullOr(Schema.Number)
}))

/** An operator's cap: the workspace's (`channel_id` null) or a channel's. */
const decodeLimits = decodeRows(Schema.Struct({
  channel_id: Schema.NullOr(Schema.String),
  daily_limit: Schema.Number
}))

/** A QR channel's protection as `GET .../qr/safety` shows it (`QrSafetyRepo.health`). */
export interface QrHealth {
  readonly overrides: QrSafetyOverrides
  /** handed to WhatsApp in the window */
  readonly sent: number
  /** accepted, not handed over yet */
  readonly queued: number
  /** accepted in the window to contacts who never wrote to the channel / who did */
  readonly newContactSends: number
  readonly existingContactSends: number
  /** numbers WhatsApp answered as on it / not on it in the window */
  readonly onWhatsApp: number
  readonly notOnWhatsApp: number
  /** queued messages a reach-out timelock holds now */
  readonly heldByTimelock: number
  /** the warm-up's facts and WhatsApp's reports (`recipientKnown` is false: no recipient) */
  readonly facts: WarmUpFacts
  readonly lastSignal: { readonly reason: ChannelStateMachine.QrRestrictionReason; readonly at: number } | null
}

/** The caps operators set: `null` where none is set. */
export interface QrSafetyOverrides {
  readonly workspace: number | null
  readonly channel: number | null
}

/** How long before its window a message handed to WhatsApp in it may have been made (`usage`). */
const HANDED_OVER_SLACK_MS = 7 * 24 * 3600 * 1000

/**
 * The ids of the messages a channel's counts at `now` (epoch ms) can hold, so the partitions they
 * read (docs/OPERATING.md "Partitions and retention"), to the day (`Partitions.idBound`):
 * - `handed`: handed to WhatsApp after `since` (`sent_at`, or `updated_at` while
 *   `provider_accepted`): a message is handed over within a day of being made (it expires then),
 *   and WhatsApp's ack of it comes within the hour; a week before `since` leaves room to spare;
 * - `unsent`: not sent yet (`queued`, `dispatching`): at most a day old, a day of clock slack aside
 *   (`Partitions.queuedWindow`);
 */
const countWindows = (since: string, now: number) => ({
  handed: Partitions.idWindow(
    "msg",
    Partitions.dayFloor(Date.parse(since) - HANDED_OVER_SLACK_MS),
    Partitions.dayCeil(now)
  ),
  unsent: Partitions.queuedWindow(now)
})

export class QrSafetyRepo extends Effect.Service<QrSafetyRepo>()("@switchboard/db/QrSafetyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Holds the channel row until the transaction ends (QR channels only: 0.5 msg/s, no contention). */
    const lockChannel = Effect.fn("QrSafetyRepo.lockChannel")(function*(channelId: string) {
      yield* sql`SELECT id FROM channels WHERE id = ${channelId} FOR UPDATE`
    }, dieOnDatabaseError)

    /**
     * The channel's outbound messages handed to WhatsApp after `since` (epoch ms of `sent_at`, or
     * of `updated_at` while `provider_accepted`), and how many are not sent yet (`queued`,
     * `dispatching`).
     */
    const usage = Effect.fn("QrSafetyRepo.usage")(function*(channelId: string, since: string) {
      const { handed, unsent } = countWindows(since, yield* Clock.currentTimeMillis)
      // ONE statement, so one snapshot: with two, a message dispatched in between (`dispatching`
      // when the handed-over ones were read, `provider_accepted` when the unsent were counted)
      // counted in neither, and a send past the cap got in
      const rows = yield* decodeUsage(
        yield* sql`SELECT sent_at AS at, NULL::int AS queued FROM messages
          WHERE channel_id = ${channelId} AND direction = 'outbound' AND sent_at > ${since}
            AND ${Partitions.inWindow(sql, "id", handed)}
        UNION ALL
        SELECT updated_at, NULL FROM messages
          WHERE channel_id = ${channelId} AND status = 'provider_accepted' AND sent_at IS NULL
            AND updated_at > ${since} AND ${Partitions.inWindow(sql, "id", handed)}
        UNION ALL
        SELECT NULL, ((SELECT count(*) FROM messages WHERE channel_id = ${channelId} AND status = 'queued'
            AND ${Partitions.inWindow(sql, "id", unsent)})
          + (SELECT count(*) FROM messages WHERE channel_id = ${channelId} AND status = 'dispatching'
            AND ${Partitions.inWindow(sql, "id", unsent)}))::int`
      )
      return {
        sentAt: rows.filter((r) => r.queued === null).map((r) => new Date(r.at!).getTime()),
        queued: rows.find((r) => r.queued !== null)?.queued ?? 0
      }
    }, dieOnDatabaseError)

    /**
     * Everything `GET .../qr/safety` shows, in ONE statement (one snapshot, one round trip): the
     * operators' caps, the messages handed to WhatsApp since `since` (as `usage` counts them) and
     * those not sent yet, the messages accepted since `since` to contacts who never wrote to the
     * channel and to those who did (as the warm-up counts them, `QrWarmUpRepo.newContactSends`),
     * the warm-up's facts, WhatsApp's restriction reports and the last signal, the recipient checks
     * answered since `since`, and the queued messages a reach-out timelock holds at `now`
     * (`DispatchOrder.due`). `None` when no such channel.
     */
    const health = Effect.fn("QrSafetyRepo.health")(function*(channelId: string, since: string, now: string) {
      const { handed, unsent } = countWindows(since, Date.parse(now))
      const rows = yield* decodeHealth(
        yield* sql`SELECT
          (SELECT daily_limit FROM qr_safety_limits l
            WHERE l.workspace_id = c.workspace_id AND l.channel_id IS NULL) AS workspace_limit,
          (SELECT daily_limit FROM qr_safety_limits l WHERE l.channel_id = c.id) AS channel_limit,
          (SELECT count(*) FROM messages m WHERE m.channel_id = c.id AND (
            (m.direction = 'outbound' AND m.sent_at > ${since})
            OR (m.status = 'provider_accepted' AND m.sent_at IS NULL AND m.updated_at > ${since}))
            AND ${Partitions.inWindow(sql, "m.id", handed)})::int AS sent,
          ((SELECT count(*) FROM messages m WHERE m.channel_id = c.id AND m.status = 'queued'
              AND ${Partitions.inWindow(sql, "m.id", unsent)})
            + (SELECT count(*) FROM messages m WHERE m.channel_id = c.id AND m.status = 'dispatching'
              AND ${Partitions.inWindow(sql, "m.id", unsent)}))::int AS queued,
          s.new_contacts, s.existing_contacts,
          r.on_whatsapp, r.not_on_whatsapp,
          CASE WHEN c.qr_timelock_until > ${now} THEN (SELECT count(*) FROM messages m
            WHERE m.channel_id = c.id AND m.status = 'queued' AND ${Partitions.inWindow(sql, "m.id", unsent)}
              AND NOT EXISTS (SELECT 1 FROM conversations cv WHERE cv.id = m.conversation_id
                AND (cv.last_inbound_at IS NOT NULL OR cv.group_chat_id IS NOT NULL)))::int ELSE 0 END AS held,
          c.qr_linked_at AS linked_at, o.mode, o.max_per_day, c.qr_timelock_until AS timelock_until,
          c.qr_new_chat_total AS total, c.qr_new_chat_used AS used,
          c.qr_new_chat_cycle_ends_at AS cycle_ends_at, c.qr_restriction_reported_at AS reported_at,
          c.qr_last_signal AS last_signal, c.qr_last_signal_at AS last_signal_at
        FROM channels c
        LEFT JOIN qr_warm_up_overrides o ON o.channel_id = c.id
        CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE cv.last_inbound_at IS NULL AND cv.group_chat_id IS NULL)::int
              AS new_contacts,
            count(*) FILTER (WHERE cv.last_inbound_at IS NOT NULL OR cv.group_chat_id IS NOT NULL)::int
              AS existing_contacts
          FROM messages m JOIN conversations cv ON cv.id = m.conversation_id
          -- the workspace's (workspace_id, created_at) index bounds this to the window's messages
          WHERE m.workspace_id = c.workspace_id AND m.channel_id = c.id AND m.direction = 'outbound'
            -- an outbound message's created_at is the time of its id: the months since the window's start
            AND m.created_at > ${since} AND ${Partitions.idsFrom(sql, "msg", "m.id", Date.parse(since))}
            AND m.status NOT IN ('cancelled', 'expired')) s
        CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE k.on_whatsapp)::int AS on_whatsapp,
            count(*) FILTER (WHERE NOT k.on_whatsapp)::int AS not_on_whatsapp
          FROM qr_recipient_checks k WHERE k.channel_id = c.id AND k.checked_at > ${since}) r
        WHERE c.id = ${channelId}`
      )
      return Option.map(Option.fromNullable(rows[0]), (r): QrHealth => ({
        overrides: { workspace: r.workspace_limit, channel: r.channel_limit },
        sent: r.sent,
        queued: r.queued,
        newContactSends: r.new_contacts,
        existingContactSends: r.existing_contacts,
        onWhatsApp: r.on_whatsapp,
        notOnWhatsApp: r.not_on_whatsapp,
        heldByTimelock: r.held,
        facts: toWarmUpFacts(r, false),
        lastSignal: r.last_signal === null || r.last_signal_at === null
          ? null
          : { reason: r.last_signal, at: new Date(r.last_signal_at).getTime() }
      }))
    }, dieOnDatabaseError)

    /** The workspace's cap and the channel's own, as operators set them. */
    const overrides = Effect.fn("QrSafetyRepo.overrides")(function*(workspaceId: string, channelId: string | null) {
      const rows = yield* decodeLimits(
        yield* sql`SELECT channel_id, daily_limit FROM qr_safety_limits
        WHERE (workspace_id = ${workspaceId} AND channel_id IS NULL)
          ${channelId === null ? sql`` : sql`OR channel_id = ${channelId}`}`
      )
      return {
        workspace: rows.find((r) => r.channel_id === null)?.daily_limit ?? null,
        channel: rows.find((r) => r.channel_id !== null)?.daily_limit ?? null
      } satisfies QrSafetyOverrides
    }, dieOnDatabaseError)

    /** Sets the workspace's cap (`channelId` null) or the channel's. */
    const setLimit = Effect.fn("QrSafetyRepo.setLimit")(
      function*(workspaceId: string, channelId: string | null, limit: number, now: string) {
        yield* channelId === null
          ? sql`INSERT INTO qr_safety_limits (workspace_id, channel_id, daily_limit, updated_at)
              VALUES (${workspaceId}, NULL, ${limit}, ${now})
              ON CONFLICT (workspace_id) WHERE channel_id IS NULL
              DO UPDATE SET daily_limit = EXCLUDED.daily_limit, updated_at = EXCLUDED.updated_at`
          : sql`INSERT INTO qr_safety_limits (workspace_id, channel_id, daily_limit, updated_at)
              VALUES (${workspaceId}, ${channelId}, ${limit}, ${now})
              ON CONFLICT (channel_id) WHERE channel_id IS NOT NULL
              DO UPDATE SET daily_limit = EXCLUDED.daily_limit, updated_at = EXCLUDED.updated_at`
      },
      dieOnDatabaseError
    )

    /** Removes the workspace's cap (`channelId` null) or the channel's. */
    const clearLimit = Effect.fn("QrSafetyRepo.clearLimit")(
      function*(workspaceId: string, channelId: string | null) {
        yield* sql`DELETE FROM qr_safety_limits WHERE workspace_id = ${workspaceId}
          AND ${channelId === null ? sql`channel_id IS NULL` : sql`channel_id = ${channelId}`}`
      },
      dieOnDatabaseError
    )

    return { lockChannel, usage, health, overrides, setLimit, clearLimit } as const
  })
}) {}
