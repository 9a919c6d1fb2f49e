/**
 * The backoff delays of the project's retries with a random share, pure (`random` in [0, 1)).
 * "Equal jitter": a delay drawn uniformly between half the ceiling and all of it, so retries
 * spread out yet never come sooner than half the ceiling (a "full jitter" would draw from 0).
 * Webhook retries (`Webhooks.retryDelayMs`) and QR reconnects (`QrClosePolicy.reconnectDelay`)
 * draw their delays here.
 */

/** Uniform in [ceiling / 2, ceiling): `random` 0 gives half, 1 would give all of it (not rounded). */
export const equalJitter = (ceiling: number, random: number): number => ceiling / 2 + random * (ceiling / 2)
