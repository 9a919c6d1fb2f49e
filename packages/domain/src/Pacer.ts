/**
 * A Channel entity's send pacing, pure (times are epoch ms; the caller brings the clock):
 * - a send slot at the provider's `max_throughput_mps`: a token bucket holding one token, refilled
 *   every `1000 / max_throughput_mps` ms, so sends are spread evenly and never burst;
 * - on linked-device (QR) channels, the per-recipient spacing of the QR safety policy
 *   (`QR_PER_RECIPIENT_CAP` sends per recipient per `QR_PER_RECIPIENT_WINDOW_MS`): a recipient at
 *   the cap waits, the others go.
 */
import { nextRecipientSendAt, QR_PER_RECIPIENT_WINDOW_MS } from "./QrSafetyWindow.js"

/** Recent sends per recipient (immutable), pruned as it goes. */
export type RecipientSpacing = ReadonlyMap<string, ReadonlyArray<number>>

export const emptyRecipientSpacing: RecipientSpacing = new Map()

/** Records a send to `recipient` at `at`, dropping entries older than the window. */
export const recordRecipientSend = (spacing: RecipientSpacing, recipient: string, at: number): RecipientSpacing => {
  const next = new Map<string, ReadonlyArray<number>>()
  for (const [r, times] of spacing) {
    const kept = times.filter((t) => t > at - QR_PER_RECIPIENT_WINDOW_MS)
    if (kept.length > 0) next.set(r, kept)
  }
  next.set(recipient, [...(next.get(recipient) ?? []), at])
  return next
}

/** When the next message to `recipient` may go (see `nextRecipientSendAt`). */
export const recipientReadyAt = (spacing: RecipientSpacing, recipient: string, now: number): number =>
  nextRecipientSendAt({ now, sentToRecipientAt: spacing.get(recipient) ?? [] })

export interface ChannelPacer {
  /** when the next send slot opens (the bucket's token is back) */
  readonly nextSlotAt: number
  /** whether the per-recipient spacing applies (linked-device channels) */
  readonly perRecipient: boolean
  readonly spacing: RecipientSpacing
}

/** Nothing sent yet: the first slot is open. */
export const idlePacer: ChannelPacer = { nextSlotAt: 0, perRecipient: false, spacing: emptyRecipientSpacing }

/**
 * A new provider connection: per-recipient spacing on or off, rebuilt from the sends of the last
 * window (`recentSends`, as recorded), so a reconnect or another runner keeps the spacing. The
 * send slot carries on.
 */
export const pacerForConnection = (
  pacer: ChannelPacer,
  perRecipient: boolean,
  recentSends: Iterable<{ readonly to: string; readonly at: number }> = []
): ChannelPacer => {
  let spacing = emptyRecipientSpacing
  if (perRecipient) { for (const sent of recentSends) spacing = recordRecipientSend(spacing, sent.to, sent.at) }
  return { nextSlotAt: pacer.nextSlotAt, perRecipient, spacing }
}

/** How long until the next send slot opens (0: open now). */
export const sendSlotWaitMs = (pacer: ChannelPacer, now: number): number => Math.max(0, pacer.nextSlotAt - now)

/** Whether a message to `recipient` must wait for the per-recipient spacing. */
export const recipientMustWait = (pacer: ChannelPacer, recipient: string, now: number): boolean =>
  pacer.perRecipient && recipientReadyAt(pacer.spacing, recipient, now) > now

/** Recipients that must wait now, and when the first of them may go again (+Infinity: none waits). */
export const waitingRecipients = (
  pacer: ChannelPacer,
  now: number
): { readonly waiting: ReadonlyArray<string>; readonly readyAt: number } => {
  const waiting: Array<string> = []
  let readyAt = Number.POSITIVE_INFINITY
  if (!pacer.perRecipient) return { waiting, readyAt }
  for (const recipient of pacer.spacing.keys()) {
    const at = recipientReadyAt(pacer.spacing, recipient, now)
    if (at > now) {
      waiting.push(recipient)
      readyAt = Math.min(readyAt, at)
    }
  }
  return { waiting, readyAt }
}

/**
 * Human pacing on linked-device (QR) channels: each gap between two sends is the rate's interval
 * plus a random share of it up to this (0.5 mps: 2 to 3 s, 2.5 s on average). A number that sends
 * on a metronome looks like a bot, and two channels of one workspace would send in lock-step;
 * never faster than the provider's rate. Other providers keep the exact interval.
 */
export const QR_PACING_JITTER = 0.5

/**
 * A send to `recipient` took the slot at `at` (the slot must be open: `sendSlotWaitMs` is 0): the
 * next slot opens `1000 / maxThroughputMps` ms later (on linked-device channels, plus the jitter:
 * `random` in [0, 1) picks it), and the recipient's spacing counts it.
 */
export const takeSendSlot = (
  pacer: ChannelPacer,
  recipient: string,
  at: number,
  maxThroughputMps: number,
  random = 0
): ChannelPacer => ({
  nextSlotAt: at + (1000 / maxThroughputMps) * (pacer.perRecipient ? 1 + QR_PACING_JITTER * random : 1),
  perRecipient: pacer.perRecipient,
  spacing: pacer.perRecipient ? recordRecipientSend(pacer.spacing, recipient, at) : pacer.spacing
})

/** The first pause after the provider throttles a channel (`PROVIDER_RATE_LIMITED`). */
export const THROTTLE_BACKOFF_BASE_MS = 30_000
/** The longest pause, however often it throttles in a row. */
export const THROTTLE_BACKOFF_MAX_MS = 15 * 60_000

/**
 * How long a channel pauses all its sends after the provider throttled it `inARow` times in a row
 * (1, 2, ...): 30 s, doubling, at most 15 minutes. Retrying each message on its own schedule
 * queried a throttling WhatsApp again for every message (rate-overlimit, docs/LIMITS.md); a pause
 * of the channel asks once per step. A send the provider takes ends the run.
 */
export const throttleBackOffMs = (inARow: number): number =>
  Math.min(THROTTLE_BACKOFF_MAX_MS, THROTTLE_BACKOFF_BASE_MS * 2 ** Math.max(0, inARow - 1))

/** No send slot opens before `until` (the provider throttled the channel). */
export const pauseUntil = (pacer: ChannelPacer, until: number): ChannelPacer => ({
  ...pacer,
  nextSlotAt: Math.max(pacer.nextSlotAt, until)
})

/**
 * How long a channel the provider keeps throttling may go without one send taken before the
 * messages it throttles fail (`failure.code = provider_throttled`): an hour. Until then a throttled
 * message waits for the channel's pause without spending one of its attempts (a throttle says
 * nothing about the message, and each attempt spent asked WhatsApp again).
 */
export const THROTTLE_MAX_WAIT_MS = 60 * 60_000

/** The `failure.code` of a message throttled past `THROTTLE_MAX_WAIT_MS`. */
export const PROVIDER_THROTTLED = "provider_throttled"

/** A run of throttles with no send taken in between: how many, since when (epoch ms). */
export interface ThrottleRun {
  readonly inARow: number
  readonly since: number
}

/**
 * The provider throttled a send at `now` (`run`: the run so far, `undefined` after a send it took):
 * the run, the channel's pause (`throttleBackOffMs` x `scale`), and whether the message has waited
 * past `maxWaitMs` and fails instead of waiting again.
 */
export const throttledAgain = (
  run: ThrottleRun | undefined,
  now: number,
  options: { readonly scale?: number; readonly maxWaitMs?: number } = {}
): { readonly run: ThrottleRun; readonly pauseMs: number; readonly givenUp: boolean } => {
  const next = { inARow: (run?.inARow ?? 0) + 1, since: run?.since ?? now }
  return {
    run: next,
    pauseMs: Math.round(throttleBackOffMs(next.inARow) * (options.scale ?? 1)),
    givenUp: now - next.since >= (options.maxWaitMs ?? THROTTLE_MAX_WAIT_MS)
  }
}
