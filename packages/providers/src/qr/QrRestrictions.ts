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
 */
import type { QrRestrictionReason } from "@switchboard/domain"

/** WhatsApp's answer to a message that it did not take. */
export interface AckRejection {
  /** the message's `failure.code` */
  readonly code: string
  /** the message's `failure.reason`: what happened and what to do, for a person */
  readonly reason: string
  /** re-queued with backoff (a retry can succeed) rather than failed */
  readonly retryable: boolean
  /** the channel's new status reason, when the refusal says something about the number */
  readonly channelReason: QrRestrictionReason | null
}

/** The message's `failure.code` when WhatsApp refused it as a restricted account's reach-out (463). */
export const ACCOUNT_RESTRICTED = "account_restricted"
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
