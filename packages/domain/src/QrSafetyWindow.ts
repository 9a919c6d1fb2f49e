/**
 * The QR safety policy, pure:
 * - a QR channel sends at most 200 messages per rolling 24 hours, counted over messages actually
 *   sent; a workspace or channel may lower that cap, nothing here raises it. A send is refused
 *   (`QR_SAFETY_LIMIT_REACHED`) when sent-in-window plus queued reaches the cap;
 * - at most 6 messages per minute go to any one recipient; more are delayed, never failed.
 * Times are epoch milliseconds.
 */

/** The platform cap: sends per rolling window. */
export const QR_DAILY_CAP = 200
export const QR_DAILY_WINDOW_MS = 24 * 60 * 60 * 1000
/** Sends to one recipient per rolling minute. */
export const QR_PER_RECIPIENT_CAP = 6
export const QR_PER_RECIPIENT_WINDOW_MS = 60 * 1000

/**
 * The cap in force: the platform cap lowered by any workspace or channel override. An override
 * above the platform cap is ignored (raising needs a platform decision, not a setting);
 * negative or fractional overrides are floored to a whole number of at least 0.
 */
export const effectiveDailyCap = (
  overrides: { readonly workspace?: number | null; readonly channel?: number | null } = {}
): number => {
  let cap = QR_DAILY_CAP
  for (const value of [overrides.workspace, overrides.channel]) {
    if (value !== undefined && value !== null && Number.isFinite(value)) {
      cap = Math.min(cap, Math.max(0, Math.floor(value)))
    }
  }
  return cap
}

export type DailyDecision =
  | { readonly _tag: "Allowed"; readonly limit: number; readonly remaining: number }
  | {
    readonly _tag: "Refused"
    readonly limit: number
    /** when a send is next possible, if nothing else is queued meanwhile */
    readonly retryAt: number
  }

/**
 * Whether one more message may be accepted on the channel.
 * @param sentAt times of the channel's messages sent in the window (older ones are ignored)
 * @param queued messages accepted but not yet sent (they will count once sent)
 */
export const decideDaily = (input: {
  readonly now: number
  readonly limit: number
  readonly sentAt: ReadonlyArray<number>
  readonly queued: number
}): DailyDecision => {
  const windowStart = input.now - QR_DAILY_WINDOW_MS
  const inWindow = input.sentAt.filter((t) => t > windowStart).sort((a, b) => a - b)
  const used = inWindow.length + input.queued
  if (used < input.limit) return { _tag: "Allowed", limit: input.limit, remaining: input.limit - used - 1 }
  // room for one more appears when (used - limit + 1) sends have left the window
  const mustExpire = used - input.limit + 1
  const leaving = inWindow[mustExpire - 1]
  // the queued ones alone fill the cap: they will be sent at the earliest now
  const retryAt = leaving === undefined ? input.now + QR_DAILY_WINDOW_MS : leaving + QR_DAILY_WINDOW_MS
  return { _tag: "Refused", limit: input.limit, retryAt }
}

/**
 * The earliest time the next message to one recipient may be dispatched: `now` when fewer than 6
 * went to them in the last minute, else one minute after the 6th most recent.
 */
export const nextRecipientSendAt = (
  input: { readonly now: number; readonly sentToRecipientAt: ReadonlyArray<number> }
): number => {
  const recent = input.sentToRecipientAt.filter((t) => t > input.now - QR_PER_RECIPIENT_WINDOW_MS).sort((a, b) => b - a)
  const sixth = recent[QR_PER_RECIPIENT_CAP - 1]
  return sixth === undefined ? input.now : Math.max(input.now, sixth + QR_PER_RECIPIENT_WINDOW_MS)
}
