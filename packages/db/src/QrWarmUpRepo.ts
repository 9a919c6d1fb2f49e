/**
 * What protects a QR number on its sends to new contacts (docs/LIMITS.md, "Number protection"):
 * the warm-up (the pure rules: domain `QrWarmUp`; when the channel's number was linked, the
 * operator's override, when the channel's sends to contacts who never wrote were accepted) and
 * WhatsApp's restriction signals recorded on the channel (`ChannelsRepo.recordRestriction`: reach-out
 * timelock, new-chat quota);
 * whether a recipient ever wrote to the channel. Read by the QR send path
 * (inside its transaction, after `QrSafetyRepo.lockChannel`) and `GET .../qr/safety`; never by
 * another provider's sends.
 */
import { SqlClient } from "@effect/sql"
import { LidAddress, type QrWarmUp } from "@switchboard/domain"
import { Effect, Schema } from "effect"
import * as Partitions from "./Partitions.js"
import { dieOnDatabaseError, TimestampColumn } from "./Rows.js"

export interface WarmUpFacts {
  /** epoch ms of the number's link; `null` when not linked yet */
  readonly linkedAt: number | null
  readonly override: QrWarmUp.WarmUpOverride
  /** the recipient wrote to this channel at least once (a reply, not a new chat) */
  readonly recipientKnown: boolean
  /** epoch ms WhatsApp's reach-out timelock ends; `null`: none reported */
  readonly timelockUntil: number | null
  /** WhatsApp's new-chat quota as last reported; `null`: none */
  readonly newChatQuota: NewChatQuota | null
}

export interface NewChatQuota {
  readonly total: number
  readonly used: number
  /** epoch ms the quota's cycle ends */
  readonly cycleEndsAt: number | null
  /** epoch ms WhatsApp reported it */
  readonly reportedAt: number
}

const ms = (value: Date | string | null) => value === null ? null : new Date(value).getTime()

const toOverride = (mode: string | null, max: number | null): QrWarmUp.WarmUpOverride =>
  mode === "off" ? { _tag: "Off" } : mode === "capped" && max !== null ? { _tag: "Capped", max } : { _tag: "Default" }

/** The columns of `channels` and `qr_warm_up_overrides` the facts are read from. */
export const WarmUpFactsRow = Schema.Struct({
  linked_at: Schema.NullOr(TimestampColumn),
  mode: Schema.NullOr(Schema.String),
  max_per_day: Schema.NullOr(Schema.Number),
  timelock_until: Schema.NullOr(TimestampColumn),
  total: Schema.NullOr(Schema.Number),
  used: Schema.NullOr(Schema.Number),
  cycle_ends_at: Schema.NullOr(TimestampColumn),
  reported_at: Schema.NullOr(TimestampColumn)
})
export type WarmUpFactsColumns = typeof WarmUpFactsRow.Type

/** `facts`' row: the columns, and whether the recipient wrote to the channel. */
const decodeFacts = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ ...WarmUpFactsRow.fields, known: Schema.Boolean }))
)
const decodeSendTimes = Schema.decodeUnknown(Schema.Array(Schema.Struct({ at: TimestampColumn })))

/** The facts of a channel's row (`undefined`: no such channel). */
export const toWarmUpFacts = (row: WarmUpFactsColumns | undefined, recipientKnown: boolean): WarmUpFacts => ({
  linkedAt: ms(row?.linked_at ?? null),
  override: toOverride(row?.mode ?? null, row?.max_per_day ?? null),
  recipientKnown,
  timelockUntil: ms(row?.timelock_until ?? null),
  newChatQuota: row && row.total !== null && row.used !== null
    ? {
      total: row.total,
      used: row.used,
      cycleEndsAt: ms(row.cycle_ends_at),
      reportedAt: ms(row.reported_at) ?? 0
    }
    : null
})

export class QrWarmUpRepo extends Effect.Service<QrWarmUpRepo>()("@switchboard/db/QrWarmUpRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** One statement: the link time, the override and (with `to`) whether the recipient is known. */
    const facts = Effect.fn("QrWarmUpRepo.facts")(function*(channelId: string, to: string | null) {
      // a reply to a contact WhatsApp named by LID alone addresses its LID
      const lid = to === null ? undefined : LidAddress.addressedLid(to)
      const rows =
        yield* sql`SELECT c.qr_linked_at AS linked_at, o.mode, o.max_per_day, c.qr_timelock_until AS timelock_until,
          c.qr_new_chat_total AS total, c.qr_new_chat_used AS used,
          c.qr_new_chat_cycle_ends_at AS cycle_ends_at, c.qr_restriction_reported_at AS reported_at,
          ${
          to === null ? sql`false` : sql`EXISTS (SELECT 1 FROM conversations cv
            JOIN contacts ct ON ct.id = cv.contact_id
            WHERE cv.channel_id = c.id AND ct.workspace_id = c.workspace_id AND ${
            lid === undefined ? sql`ct.phone_number = ${to}` : sql`ct.whatsapp_lid = ${lid}`
          }
              AND cv.last_inbound_at IS NOT NULL)`
        } AS known
        FROM channels c LEFT JOIN qr_warm_up_overrides o ON o.channel_id = c.id
        WHERE c.id = ${channelId}`
      const row = (yield* decodeFacts(rows))[0]
      return toWarmUpFacts(row, row?.known === true)
    }, dieOnDatabaseError)

    /**
     * When the channel's outbound messages accepted after `since` to contacts who never wrote to
     * it were accepted (epoch ms); a group chat is never a new contact. Reads the channel's conversations, so only called while a
     * channel warms up (its first 14 days: a few hundred conversations at most). Runs on every
     * such send: the channel's workspace bounds the messages read to the window's, through the
     * workspace's (workspace_id, created_at) index, instead of scanning the channel's history.
     */
    const newContactSends = Effect.fn("QrWarmUpRepo.newContactSends")(function*(channelId: string, since: string) {
      // an outbound message's `created_at` is the time of its id: the partitions from `since` on
      const rows = yield* sql`SELECT m.created_at AS at
        FROM channels c JOIN conversations cv ON cv.channel_id = c.id
          JOIN messages m ON m.conversation_id = cv.id
        WHERE c.id = ${channelId} AND cv.last_inbound_at IS NULL AND cv.group_chat_id IS NULL
          AND m.workspace_id = c.workspace_id AND m.direction = 'outbound' AND m.created_at > ${since}
          AND ${Partitions.idsFrom(sql, "msg", "m.id", Date.parse(since))} AND m.status NOT IN ('cancelled', 'expired')`
      return (yield* decodeSendTimes(rows)).map((r) => new Date(r.at).getTime())
    }, dieOnDatabaseError)

    /** Sets the channel's override (`Default` removes it). */
    const setOverride = Effect.fn("QrWarmUpRepo.setOverride")(
      function*(workspaceId: string, channelId: string, override: QrWarmUp.WarmUpOverride, now: string) {
        if (override._tag === "Default") {
          yield* sql`DELETE FROM qr_warm_up_overrides WHERE channel_id = ${channelId}`
          return
        }
        const mode = override._tag === "Off" ? "off" : "capped"
        const max = override._tag === "Capped" ? override.max : null
        yield* sql`INSERT INTO qr_warm_up_overrides (channel_id, workspace_id, mode, max_per_day, updated_at)
          VALUES (${channelId}, ${workspaceId}, ${mode}, ${max}, ${now})
          ON CONFLICT (channel_id) DO UPDATE SET mode = EXCLUDED.mode, max_per_day = EXCLUDED.max_per_day,
            updated_at = EXCLUDED.updated_at`
      },
      dieOnDatabaseError
    )

    return { facts, newContactSends, setOverride } as const
  })
}) {}
