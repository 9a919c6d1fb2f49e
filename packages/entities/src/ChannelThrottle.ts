/**
 * A channel the provider throttles (`PROVIDER_RATE_LIMITED`; on QR channels WhatsApp's
 * `rate-overlimit`, docs/LIMITS.md "Number protection"): every send of the channel pauses
 * (30 s, doubling, at most 15 minutes: `throttledAgain`), and the throttled message waits for the
 * pause without spending one of its attempts: retrying each message on its own schedule asked a
 * throttling WhatsApp again for each, and failed messages for the channel's speed, not for
 * themselves. A run of throttles with no send taken for `THROTTLE_MAX_WAIT_MS` (an hour) fails
 * the message it throttles (`provider_throttled`). A send the provider takes ends the run.
 */
import { Pacer } from "@switchboard/domain"
import { Clock, Context, Effect } from "effect"

/** The pauses' scale and the run's bound; tests shorten them. */
export class ThrottleSettings extends Context.Reference<ThrottleSettings>()(
  "@switchboard/entities/ThrottleSettings",
  {
    defaultValue: (): { readonly scale: number; readonly maxWaitMs: number } => ({
      scale: 1,
      maxWaitMs: Pacer.THROTTLE_MAX_WAIT_MS
    })
  }
) {}

/** What becomes of a throttled message: it waits until `until`, or it fails (`failure`). */
export type ThrottleOutcome =
  | { readonly _tag: "Wait"; readonly until: number; readonly pauseMs: number }
  | { readonly _tag: "GiveUp"; readonly failure: { retryable: false; code: string; reason: string } }

/** One per Channel entity, its methods shared by all (no per-entity closures). */
export class ChannelThrottle {
  private run: Pacer.ThrottleRun | undefined = undefined
  constructor(private readonly settings: ThrottleSettings["Type"]) {}

  /** The provider took a send: the run is over. */
  accepted() {
    this.run = undefined
  }

  /** The provider throttled a send now: the channel's pause, and the message's outcome. */
  get throttled(): Effect.Effect<ThrottleOutcome> {
    return Effect.map(Clock.currentTimeMillis, (now) => {
      const next = Pacer.throttledAgain(this.run, now, this.settings)
      this.run = next.run
      const outcome: ThrottleOutcome = next.givenUp
        ? {
          _tag: "GiveUp",
          failure: {
            retryable: false,
            code: Pacer.PROVIDER_THROTTLED,
            reason: `the provider kept throttling this channel for ${
              Math.round((now - next.run.since) / 60_000)
            } minutes without taking a send (rate-overlimit): not sent`
          }
        }
        : { _tag: "Wait", until: now + next.pauseMs, pauseMs: next.pauseMs }
      return outcome
    })
  }
}

export const makeChannelThrottle = Effect.map(ThrottleSettings, (settings) => new ChannelThrottle(settings))
