/**
 * Attempts that could not reach WhatsApp (`QrConnectFailure`): counted in a row, the last one's
 * reason kept and reported (a `connection_error` event, a metric, a warning) until WhatsApp
 * answers again or pairing restarts.
 */
import { Effect } from "effect"
import type { QrConnectFailure } from "./QrConnectFailure.js"
import type { QrConnectionError, QrConnectionEvent } from "./QrConnectionEvent.js"
import * as QrMetrics from "./QrMetrics.js"

export const make = (options: {
  readonly channelId: string
  readonly annotations: Record<string, string>
  readonly publish: (event: QrConnectionEvent) => Effect.Effect<boolean>
}) => {
  let failures = 0
  let error: QrConnectionError | null = null
  return {
    /** attempts in a row that could not reach WhatsApp */
    failures: () => failures,
    /** why the last one failed, until WhatsApp answers */
    error: () => error,
    /** one more attempt could not reach WhatsApp */
    count: () => {
      failures++
    },
    /** WhatsApp answered: connection errors so far are over */
    clear: () => {
      failures = 0
      error = null
    },
    /** Records and reports why an attempt could not reach WhatsApp (`nextAttemptAt` null: giving up). */
    report: (failure: QrConnectFailure, nextAttemptAt: number | null) =>
      Effect.gen(function*() {
        const current = { reason: failure.reason, message: failure.message, failures, nextAttemptAt }
        error = current
        yield* QrMetrics.unreachable(failure.reason)
        yield* Effect.logWarning("qr connection attempt could not reach WhatsApp").pipe(Effect.annotateLogs({
          ...options.annotations,
          reason: failure.reason,
          failures,
          detail: failure.message
        }))
        yield* options.publish({ _tag: "connection_error", channelId: options.channelId, ...current })
      })
  } as const
}
