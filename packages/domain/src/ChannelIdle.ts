/**
 * What a Channel entity's dispatch loop does when it found nothing due (pure; times are epoch ms,
 * the caller brings the clock): whether it keeps itself alive, whether its connection may be
 * closed for idleness, and how long it waits for a wake-up before it looks at its rows again
 * (`ChannelEntity.ts` runs it; docs/ARCHITECTURE.md "Where things happen", dispatch).
 */

/** How long a loop with something under way (recipients waiting, receipts at the provider) waits before it looks again. */
export const UNDER_WAY_POLL_MS = 1_000

/**
 * How long a connected channel with nothing due (no queued message, no receipt under way, no
 * recipient waiting) waits before it looks at its rows again. Everything that gives it work wakes
 * it (a send, a status change; the sweeper repeats lost wake-ups and wakes due retries), so this
 * is only a backstop, and thousands of idle channels on a runner must not poll the database
 * every second.
 */
export const NOTHING_DUE_POLL_MS = 10_000

export interface NothingDue {
  /** recipients waiting for their spacing, or receipts under way at the provider */
  readonly underWay: boolean
  /** a linked device (QR) holds or is making its link */
  readonly linkHeld: boolean
  /** the provider lets the connection go when idle (the sandbox) */
  readonly dropWhenIdle: boolean
}

/**
 * Whether the entity keeps itself alive (a held link, or something under way), and whether its
 * connection may be closed once it has been quiet for the idle time (a droppable connection with
 * nothing under way; `ChannelConnection.closeIfIdle` checks the quiet time).
 */
export const nothingDue = (state: NothingDue): { readonly keepAlive: boolean; readonly mayClose: boolean } => ({
  keepAlive: state.linkHeld || state.underWay,
  mayClose: state.dropWhenIdle && !state.underWay
})

/**
 * How long to wait for a wake-up: `UNDER_WAY_POLL_MS` with something under way; else
 * `NOTHING_DUE_POLL_MS`, or the idle time when shorter for a connection that may be closed (so it
 * is closed on time); never past the moment a waiting recipient may go (`readyAt`) or the
 * channel's throttling pause ends (`pausedUntil`, when after `readAt`, the time the queue was
 * read), and at least 10 ms.
 */
export const nothingDueWaitMs = (
  state: {
    readonly underWay: boolean
    readonly mayClose: boolean
    readonly idleMs: number
    readonly readyAt: number
    readonly pausedUntil: number
    readonly readAt: number
  },
  now: number
): number => {
  const poll = state.underWay
    ? UNDER_WAY_POLL_MS
    : state.mayClose
    ? Math.min(NOTHING_DUE_POLL_MS, state.idleMs)
    : NOTHING_DUE_POLL_MS
  const untilReady = Math.min(state.readyAt, state.pausedUntil > state.readAt ? state.pausedUntil : Infinity) - now
  return Math.min(poll, Math.max(10, untilReady))
}
