/**
 * Incoming calls on a QR connection (docs/QR-CHANNELS.md "Calls"): Baileys' `call` events, one per
 * step of a call (offer, accept, reject, timeout, terminate), folded into one outcome per call.
 * The offer is reported at once (`call_offer`: the owner applies the channel's call policy and may
 * reject it); the outcome, once known, is reported as an inbound message of type `call` whose
 * provider id is the call's id, so a call heard twice is recorded once.
 */
import type { MessageContent } from "@switchboard/domain"
import type { WACallEvent } from "baileys"
import { Clock, Duration, Effect } from "effect"
import { senderOf } from "./BaileysJids.js"
import type { QrConnectionEvent } from "./QrConnectionEvent.js"
import { QrNotConnected, QrSendFailed } from "./QrSendError.js"
import type { QrLink } from "./QrSocket.js"

/** What is known of a call under way. */
export interface CallState {
  readonly sender: MessageContent.InboundSender
  readonly video: boolean
  /** epoch ms of the offer */
  readonly offeredAt: number
  /** epoch ms when another of the number's devices answered */
  readonly acceptedAt: number | null
}

/** How a call ended, from its last step: `null` while it still rings (or the step ends nothing). */
export const outcomeOf = (
  step: WACallEvent["status"],
  call: Pick<CallState, "acceptedAt">,
  at: number
): { readonly status: MessageContent.CallStatus; readonly durationS: number | null } | null => {
  switch (step) {
    case "reject":
      return { status: "rejected", durationS: null }
    case "timeout":
      return { status: "missed", durationS: null }
    case "terminate":
      // answered on the phone (or another linked device), then hung up: how long it lasted
      return call.acceptedAt === null
        ? { status: "missed", durationS: null }
        : { status: "answered_elsewhere", durationS: Math.max(0, Math.round((at - call.acceptedAt) / 1000)) }
    default:
      return null
  }
}

/** Calls followed at once on one connection (the oldest are forgotten past it). */
const MAX_CALLS = 1_000

export const make = (options: {
  readonly channelId: string
  readonly annotations: Record<string, string>
  readonly publish: (event: QrConnectionEvent) => Effect.Effect<boolean>
}) => {
  const { annotations, channelId, publish } = options
  const calls = new Map<string, CallState>()

  const report = (callId: string, call: CallState, step: WACallEvent["status"], at: number) =>
    Effect.gen(function*() {
      const outcome = outcomeOf(step, call, at)
      if (outcome === null) return
      calls.delete(callId)
      yield* publish({
        _tag: "inbound",
        channelId,
        content: {
          providerMessageId: callId,
          sender: call.sender,
          body: { _tag: "call", video: call.video, status: outcome.status, durationS: outcome.durationS },
          quotedProviderMessageId: null,
          at: call.offeredAt
        }
      })
    })

  /** Baileys' `call` events, in the order heard. */
  const handle = (events: ReadonlyArray<WACallEvent>) =>
    Effect.forEach(events, (event) =>
      Effect.gen(function*() {
        const at = event.date instanceof Date && !Number.isNaN(event.date.getTime())
          ? event.date.getTime()
          : yield* Clock.currentTimeMillis
        if (event.isGroup === true || event.groupJid !== undefined) {
          // group calls are not a contact's: logged, never a conversation's
          return yield* Effect.logDebug("qr group call ignored").pipe(Effect.annotateLogs(annotations))
        }
        if (event.status === "offer") {
          const sender = senderOf(
            event.callerPn === undefined
              ? { remoteJid: event.from }
              : { remoteJid: event.from, remoteJidAlt: event.callerPn }
          )
          if (sender === null) {
            return yield* Effect.logWarning("qr call without a caller ignored").pipe(Effect.annotateLogs(annotations))
          }
          const video = event.isVideo === true
          if (!calls.has(event.id)) {
            if (calls.size >= MAX_CALLS) calls.delete(calls.keys().next().value!)
            calls.set(event.id, { sender, video, offeredAt: at, acceptedAt: null })
          }
          return yield* publish({
            _tag: "call_offer",
            channelId,
            callId: event.id,
            callerJid: event.from,
            sender,
            video,
            at
          })
        }
        const call = calls.get(event.id)
        // a step of a call whose offer this connection did not hear (before a reconnect): no outcome
        if (call === undefined) return
        if (event.status === "accept") {
          calls.set(event.id, { ...call, acceptedAt: at })
          return
        }
        yield* report(event.id, call, event.status, at)
      }), { discard: true })

  return { handle } as const
}

/** Rejects a ringing call at WhatsApp (Baileys' `rejectCall`); succeeds once WhatsApp answered. */
export const rejectCall = (options: {
  readonly channelId: string
  readonly link: () => QrLink
  readonly queryTimeout: Duration.Duration
}) =>
(callId: string, callerJid: string) =>
  Effect.suspend((): Effect.Effect<void, QrNotConnected | QrSendFailed> => {
    const { channelId } = options
    const { socket: s, status } = options.link()
    if (!s) return Effect.fail(new QrNotConnected({ channelId, status }))
    const failed = (reason: string) => new QrSendFailed({ channelId, messageId: callId, reason })
    return Effect.tryPromise({
      try: () => s.rejectCall(callId, callerJid),
      catch: (error) => failed(error instanceof Error ? error.message : String(error))
    }).pipe(
      Effect.timeoutFail({ duration: Duration.times(options.queryTimeout, 2), onTimeout: () => failed("timed out") })
    )
  }).pipe(Effect.withSpan("QrConnection.rejectCall", { attributes: { channel_id: options.channelId } }))
