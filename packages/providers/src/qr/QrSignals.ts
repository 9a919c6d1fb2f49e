/**
 * Restriction signals on a live QR connection: WhatsApp's reach-out timelock, its new-chat quota,
 * a rate limit on a send, recorded as a `restriction` event, counted, and shown in the channel's
 * status reason. What each signal means is decided in `QrRestrictions`.
 */
import type { ChannelStateMachine } from "@switchboard/domain"
import { Clock, Effect } from "effect"
import type { QrConnectionEvent } from "./QrConnectionEvent.js"
import * as QrProtectionMetrics from "./QrProtectionMetrics.js"
import { cappingSignal, timelockSignal } from "./QrRestrictions.js"

export const make = (options: {
  readonly channelId: string
  readonly annotations: Record<string, string>
  readonly publish: (event: QrConnectionEvent) => Effect.Effect<boolean>
  /** moves the channel's status (the connection's state machine) */
  readonly restrict: (reason: ChannelStateMachine.QrRestrictionReason) => Effect.Effect<void>
}) => {
  const { annotations, channelId, publish } = options

  /** A restriction signal: counted, and shown in the channel's status reason. */
  const signalled = (reason: ChannelStateMachine.QrRestrictionReason) =>
    Effect.zipRight(QrProtectionMetrics.signal(reason), options.restrict(reason))

  /** The same, reported as the channel's last restriction signal (`GET .../qr/safety`). */
  const restricted = (reason: ChannelStateMachine.QrRestrictionReason) =>
    Clock.currentTimeMillis.pipe(
      Effect.flatMap((at) => publish({ _tag: "restriction", channelId, signal: reason, at })),
      Effect.zipRight(signalled(reason))
    )

  /** WhatsApp's reach-out timelock or new-chat quota: recorded on the channel, and its reason. */
  const reported = (timelock: unknown, capping: unknown) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const lock = timelock === undefined ? undefined : timelockSignal(timelock, now)
      const quota = capping === undefined ? undefined : cappingSignal(capping)
      if (lock === undefined && quota === undefined) return
      yield* Effect.logWarning("qr number restriction reported by WhatsApp").pipe(Effect.annotateLogs({
        ...annotations,
        ...(lock === undefined
          ? {}
          : { timelock_until: lock.until === null ? "lifted" : new Date(lock.until).toISOString() }),
        ...(quota === undefined ? {} : { new_chat_quota: `${quota.used}/${quota.total}` })
      }))
      const reason = lock?.channelReason ?? quota?.channelReason
      yield* publish({
        _tag: "restriction",
        channelId,
        ...(lock === undefined ? {} : { timelockUntil: lock.until }),
        ...(quota === undefined ? {} : {
          newChatQuota: { total: quota.total, used: quota.used, cycleEndsAt: quota.cycleEndsAt }
        }),
        ...(reason ? { signal: reason, at: now } : {})
      })
      if (reason) yield* signalled(reason)
    })

  return { restricted, reported } as const
}
