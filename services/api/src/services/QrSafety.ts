/**
 * The QR safety cap on the send path: the pure policy is
 * `decideDaily`/`effectiveDailyCap` in the domain; this reads what it needs under the channel's
 * row lock and refuses with 429 `QR_SAFETY_LIMIT_REACHED`.
 */
import { QrSafetyRepo } from "@switchboard/db"
import {
  decideDaily,
  effectiveDailyCap,
  QR_DAILY_WINDOW_MS,
  QrSafetyLimitReached,
  toTimestamp
} from "@switchboard/domain"
import type { Channel } from "@switchboard/domain"
import { Clock, Effect } from "effect"

export class QrSafety extends Effect.Service<QrSafety>()("@switchboard/service-api/QrSafety", {
  effect: Effect.gen(function*() {
    const repo = yield* QrSafetyRepo

    /**
     * Refuses one more message on a QR channel whose sent-in-window plus queued reached its cap;
     * other providers pass. Call inside the send transaction, before the message is inserted:
     * the channel row lock (held to commit) makes concurrent sends count one after the other.
     */
    const admit = Effect.fn("QrSafety.admit")(function*(channel: Channel) {
      if (channel.provider !== "qr") return
      yield* repo.lockChannel(channel.id)
      // read after the lock: the clock and the count see every send committed before us
      const now = yield* Clock.currentTimeMillis
      const limit = effectiveDailyCap(yield* repo.overrides(channel.workspace_id, channel.id))
      const usage = yield* repo.usage(channel.id, toTimestamp(now - QR_DAILY_WINDOW_MS))
      const decision = decideDaily({ now, limit, sentAt: usage.sentAt, queued: usage.queued })
      if (decision._tag === "Allowed") return
      const seconds = Math.max(1, Math.ceil((decision.retryAt - now) / 1000))
      return yield* new QrSafetyLimitReached({
        message:
          `The QR channel's safety cap of ${decision.limit} messages per 24 hours is reached (sent plus queued); retry later`,
        details: { limit: decision.limit, retry_at: toTimestamp(decision.retryAt), retry_after_seconds: seconds }
      })
    })

    /** Where a QR channel stands against its cap now (no lock: a reading, not an admission). */
    const usageOf = Effect.fn("QrSafety.usageOf")(function*(channel: Channel) {
      const now = yield* Clock.currentTimeMillis
      const limit = effectiveDailyCap(yield* repo.overrides(channel.workspace_id, channel.id))
      const usage = yield* repo.usage(channel.id, toTimestamp(now - QR_DAILY_WINDOW_MS))
      const sent = usage.sentAt.filter((t) => t > now - QR_DAILY_WINDOW_MS).length
      return {
        channel_id: channel.id,
        limit,
        sent_24h: sent,
        queued: usage.queued,
        remaining: Math.max(0, limit - sent - usage.queued)
      }
    })

    return { admit, usageOf } as const
  }),
  dependencies: [QrSafetyRepo.Default]
}) {}
