/**
 * What WhatsApp's refusals and restriction signals mean for a QR channel, pure (docs/LIMITS.md,
 * "Number protection"). `QrConnection` reads them off the socket; this module decides what each one
 * does to the message and to the channel.
 *
 * An ack with an `error` attribute is WhatsApp refusing a message it was handed (Baileys only logs
 * it and marks the message ERROR). Codes seen (Baileys 7.0.0-rc14, `SERVER_ERROR_CODES`,
 * `NACK_REASONS`):
 *
 * | error | meaning | the message | the channel |
 * |---|---|---|---|
 * | 463 | account restricted, reach-out timelock, or the contact's privacy token is missing: no new chats | `failed_permanent`, `account_restricted` (never retried: a retry is another reach-out and deepens the restriction) | `account_restricted` |
 * | 429 | rate-overlimit | retried with backoff, `PROVIDER_RATE_LIMITED` | `rate_limited` |
 * | 479 | stanza refused (stale device session, bad addressing) | retried with backoff, `provider_rejected` | unchanged |
 * | other | refused | `failed_permanent`, `provider_rejected` | unchanged |
 *
 * A reach-out timelock (`connection.update` with `reachoutTimeLock`) and WhatsApp's new-chat quota
 * (`message-capping.update`) are recorded on the channel: sends to new contacts are refused while
 * either holds (`timelockSignal`, `cappingSignal`).
 */
import type { ChannelStateMachine } from "@switchboard/domain"
import { Option, Schema } from "effect"

/** WhatsApp's answer to a message that it did not take. */
export interface AckRejection {
  /** the message's `failure.code` */
  readonly code: string
  /** the message's `failure.reason`: what happened and what to do, for a person */
  readonly reason: string
  /** re-queued with backoff (a retry can succeed) rather than failed */
  readonly retryable: boolean
  /** the channel's new status reason, when the refusal says something about the number */
  readonly channelReason: ChannelStateMachine.QrRestrictionReason | null
}

/** The message's `failure.code` when WhatsApp refused it as a restricted account's reach-out (463). */
export const ACCOUNT_RESTRICTED = "account_restricted"
/** The message's `failure.code` when its number is not on WhatsApp (`QrRecipientCheck`). */
export const NOT_ON_WHATSAPP = "not_on_whatsapp"
/** The message's `failure.code` for any other refusal in WhatsApp's ack. */
export const PROVIDER_REJECTED = "provider_rejected"

/** What an ack's `error` attribute means (`error` as WhatsApp sent it, e.g. `"463"`). */
export const classifyAckError = (error: string): AckRejection => {
  switch (error) {
    case "463":
      return {
        code: ACCOUNT_RESTRICTED,
        reason:
          "WhatsApp refused the message (error 463): the number may not start new chats right now (restricted account or reach-out timelock). Not retried: each retry counts as another reach-out",
        retryable: false,
        channelReason: "account_restricted"
      }
    case "429":
      return {
        code: "PROVIDER_RATE_LIMITED",
        reason: "WhatsApp throttled this channel's sends (error 429, rate-overlimit)",
        retryable: true,
        channelReason: "rate_limited"
      }
    case "479":
      return {
        code: PROVIDER_REJECTED,
        reason: "WhatsApp refused the message (error 479: stale device session or addressing); retried",
        retryable: true,
        channelReason: null
      }
    default:
      return {
        code: PROVIDER_REJECTED,
        reason: `WhatsApp refused the message (error ${/^\d{1,4}$/.test(error) ? error : "unknown"})`,
        retryable: false,
        channelReason: null
      }
  }
}

/** What a reach-out timelock report means: until when new chats are paused, and the channel's reason. */
export interface TimelockSignal {
  /** epoch ms; `null` when lifted */
  readonly until: number | null
  readonly channelReason: ChannelStateMachine.QrRestrictionReason
}

/**
 * A `reachoutTimeLock` connection update (`{isActive, timeEnforcementEnds, enforcementType}`). An
 * active lock without an end (WhatsApp omitted it) pauses for a minute, as WhatsApp Web does; one
 * that already ended is lifted.
 */
export const timelockSignal = (raw: unknown, now: number): TimelockSignal | undefined => {
  const decoded = decodeTimelock(raw)
  if (Option.isNone(decoded)) return undefined
  const ends = decoded.value.timeEnforcementEnds?.getTime()
  const until = decoded.value.isActive === true
    ? (ends !== undefined && Number.isFinite(ends) ? ends : now + 60_000)
    : null
  return until !== null && until > now
    ? { until, channelReason: "reachout_timelocked" }
    : { until: null, channelReason: "restriction_lifted" }
}

const Timelock = Schema.Struct({
  isActive: Schema.optional(Schema.NullOr(Schema.Boolean)),
  timeEnforcementEnds: Schema.optional(Schema.NullOr(Schema.DateFromSelf))
})
const decodeTimelock = Schema.decodeUnknownOption(Timelock)

/** What a `message-capping.update` means: WhatsApp's new-chat quota, and whether it is used up. */
export interface CappingSignal {
  readonly total: number
  readonly used: number
  /** epoch ms when the quota's cycle ends */
  readonly cycleEndsAt: number | null
  /** `new_chats_capped` once the quota is used up (or WhatsApp says CAPPED), else none */
  readonly channelReason: ChannelStateMachine.QrRestrictionReason | null
}

const Capping = Schema.Struct({
  total_quota: Schema.optional(Schema.NullOr(Schema.Number)),
  used_quota: Schema.optional(Schema.NullOr(Schema.Number)),
  cycle_end_timestamp: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Number))),
  capping_status: Schema.optional(Schema.NullOr(Schema.String))
})
const decodeCapping = Schema.decodeUnknownOption(Capping)

export const cappingSignal = (raw: unknown): CappingSignal | undefined => {
  const decoded = decodeCapping(raw)
  if (Option.isNone(decoded)) return undefined
  const { capping_status, cycle_end_timestamp, total_quota, used_quota } = decoded.value
  if (typeof total_quota !== "number" || typeof used_quota !== "number") return undefined
  const seconds = cycle_end_timestamp === null || cycle_end_timestamp === undefined
    ? Number.NaN
    : Number(cycle_end_timestamp)
  const capped = capping_status === "CAPPED" || used_quota >= total_quota
  return {
    total: total_quota,
    used: used_quota,
    cycleEndsAt: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : null,
    channelReason: capped ? "new_chats_capped" : null
  }
}
