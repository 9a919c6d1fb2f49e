/**
 * The warm-up of a newly linked QR number, pure (docs/LIMITS.md, "Number protection").
 *
 * WhatsApp bans new numbers that start many chats at once (peers' users: "every number I connect is
 * banned", a new number suspended hours after linking). For the first `WARM_UP_DAYS` days after a
 * channel is linked, sends to **new contacts** (recipients who never wrote to the channel, the
 * chats WhatsApp itself caps) are limited per rolling 24 h to a cap that ramps from
 * `WARM_UP_FIRST_DAY_CAP` on day 1 to the full safety window (`QR_DAILY_CAP`) on the last day.
 * Replies to contacts who wrote to the channel are not warm-up sends: only the channel's 24 h
 * safety cap applies to them. Operators may lower the ramp (`max`) or switch it off per channel.
 * Times are epoch milliseconds; days count from the link, in 24 h steps.
 */
import { QR_DAILY_CAP, QR_DAILY_WINDOW_MS } from "./QrSafetyWindow.js"

/** How long a new link warms up. */
export const WARM_UP_DAYS = 14
/** New-contact sends per 24 h on the first day. */
export const WARM_UP_FIRST_DAY_CAP = 20
const DAY_MS = 24 * 60 * 60 * 1000

/** Day `day` (1-based) of the default ramp: linear from 20 on day 1 to 200 on day 14. */
export const warmUpDailyCap = (day: number): number =>
  Math.round(
    WARM_UP_FIRST_DAY_CAP + (QR_DAILY_CAP - WARM_UP_FIRST_DAY_CAP) * (Math.min(day, WARM_UP_DAYS) - 1) /
        (WARM_UP_DAYS - 1)
  )

/** The default ramp, day 1 first. */
export const WARM_UP_SCHEDULE: ReadonlyArray<number> = Array.from(
  { length: WARM_UP_DAYS },
  (_, i) => warmUpDailyCap(i + 1)
)

/** What an operator set for a channel: nothing (the default ramp), off, or a lower ceiling. */
export type WarmUpOverride =
  | { readonly _tag: "Default" }
  | { readonly _tag: "Off" }
  /** each day's cap is the ramp's, lowered to `max` */
  | { readonly _tag: "Capped"; readonly max: number }

export type WarmUpStage =
  /** switched off by an operator, or no link time known (a channel linked before warm-ups existed) */
  | { readonly _tag: "Off" }
  /** the warm-up is over: only the safety window applies */
  | { readonly _tag: "Complete"; readonly endedAt: number }
  | {
    readonly _tag: "WarmingUp"
    /** 1 .. WARM_UP_DAYS */
    readonly day: number
    /** new-contact sends per rolling 24 h today */
    readonly limit: number
    /** when the next day (and its cap) begins */
    readonly dayEndsAt: number
    /** when the warm-up ends */
    readonly endsAt: number
  }

/** Where a channel linked at `linkedAt` stands at `now`. */
export const warmUpStage = (input: {
  readonly now: number
  readonly linkedAt: number | null
  readonly override: WarmUpOverride
}): WarmUpStage => {
  if (input.override._tag === "Off" || input.linkedAt === null) return { _tag: "Off" }
  const endsAt = input.linkedAt + WARM_UP_DAYS * DAY_MS
  if (input.now >= endsAt) return { _tag: "Complete", endedAt: endsAt }
  const day = Math.max(1, Math.floor((input.now - input.linkedAt) / DAY_MS) + 1)
  return {
    _tag: "WarmingUp",
    day,
    limit: capOf(day, input.override),
    dayEndsAt: input.linkedAt + day * DAY_MS,
    endsAt
  }
}

/** The cap on day `day`; past the warm-up there is none. */
const capOf = (day: number, override: WarmUpOverride): number => {
  if (day > WARM_UP_DAYS) return Number.POSITIVE_INFINITY
  const ramp = warmUpDailyCap(day)
  return override._tag === "Capped" ? Math.min(ramp, Math.max(0, Math.floor(override.max))) : ramp
}

export type WarmUpDecision =
  | { readonly _tag: "Allowed" }
  | { readonly _tag: "Refused"; readonly limit: number; readonly day: number; readonly retryAt: number }

/**
 * Whether one more send to a new contact may be accepted.
 * @param newContactSentAt when the channel's earlier sends to new contacts were accepted (older
 *   than 24 h are ignored)
 */
export const decideWarmUp = (input: {
  readonly now: number
  readonly linkedAt: number | null
  readonly override: WarmUpOverride
  readonly newContactSentAt: ReadonlyArray<number>
}): WarmUpDecision => {
  const stage = warmUpStage(input)
  if (stage._tag !== "WarmingUp") return { _tag: "Allowed" }
  const linkedAt = input.linkedAt!
  const inWindow = (at: number) => input.newContactSentAt.filter((t) => t > at - QR_DAILY_WINDOW_MS && t <= at).length
  if (inWindow(input.now) < stage.limit) return { _tag: "Allowed" }
  // the first moment with room, if nothing else is sent meanwhile: a send leaving the window, or
  // a new day's higher cap beginning; at the latest, the end of the warm-up
  const candidates = [
    ...input.newContactSentAt.map((t) => t + QR_DAILY_WINDOW_MS),
    ...Array.from({ length: WARM_UP_DAYS - stage.day }, (_, i) => stage.dayEndsAt + i * DAY_MS)
  ].filter((at) => at > input.now && at < stage.endsAt).sort((a, b) => a - b)
  const dayAt = (at: number) => Math.floor((at - linkedAt) / DAY_MS) + 1
  const retryAt = candidates.find((at) => inWindow(at) < capOf(dayAt(at), input.override)) ?? stage.endsAt
  return { _tag: "Refused", limit: stage.limit, day: stage.day, retryAt }
}
