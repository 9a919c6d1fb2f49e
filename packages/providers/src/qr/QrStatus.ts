/**
 * A QR connection's channel status: moved only by the domain's `transitionChannel`
 * (ChannelStateMachine), each move logged, counted in the status gauge (`QrMetrics`) while the
 * connection lives, and published as a `state` event.
 */
import { ChannelStateMachine } from "@switchboard/domain"
import { Effect, type Scope } from "effect"
import type { QrConnectionError, QrConnectionEvent, QrStateEvent } from "./QrConnectionEvent.js"
import * as QrMetrics from "./QrMetrics.js"

export interface QrStatus {
  /** The status now. */
  readonly current: () => ChannelStateMachine.ChannelStatus
  /**
   * Applies `event` to the status; a refused or unchanged transition does nothing. `closeCode`
   * (WhatsApp's, when a close caused it) and `causedBy` (why WhatsApp was not reached) go into the
   * log line and the `state` event.
   */
  readonly move: (
    event: ChannelStateMachine.ChannelInput,
    closeCode?: number | null,
    causedBy?: QrConnectionError | null
  ) => Effect.Effect<void>
  /** Counts this connection in the status gauge from now until the scope ends. */
  readonly counted: Effect.Effect<void, never, Scope.Scope>
}

export const make = (options: {
  readonly channelId: string
  readonly annotations: Record<string, string>
  /** the channel's stored status; `state` events report transitions from it */
  readonly initialStatus: ChannelStateMachine.ChannelStatus
  readonly publish: (event: QrConnectionEvent) => Effect.Effect<unknown>
  /** the linked number, for `state` events */
  readonly phoneNumber: () => string | null
}): QrStatus => {
  const { annotations, channelId, publish } = options
  let status = options.initialStatus
  /** whether this connection counts in the status gauge (`QrMetrics`): from set-up to its end */
  let counted = false

  const move = (
    event: ChannelStateMachine.ChannelInput,
    closeCode: number | null = null,
    causedBy: QrConnectionError | null = null
  ) =>
    Effect.gen(function*() {
      const t = ChannelStateMachine.transitionChannel(status, event)
      if (t._tag !== "Moved") return
      status = t.to
      if (counted) yield* QrMetrics.moved(t.from, t.to)
      yield* Effect.logInfo("qr channel status changed").pipe(Effect.annotateLogs({
        ...annotations,
        from_status: t.from,
        to_status: t.to,
        reason: t.reason,
        ...(closeCode === null ? {} : { close_code: closeCode })
      }))
      yield* publish(
        {
          _tag: "state",
          channelId,
          from: t.from,
          to: t.to,
          reason: t.reason,
          closeCode,
          requiresRepair: t.requiresRepair,
          phoneNumber: options.phoneNumber(),
          connectionError: causedBy
        } satisfies QrStateEvent
      )
    })

  return {
    current: () => status,
    move,
    counted: Effect.gen(function*() {
      yield* QrMetrics.moved(undefined, status)
      counted = true
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          counted = false
          return QrMetrics.ended(status)
        })
      )
    })
  }
}
