/**
 * What a QR connection offers its owner (the Channel entity, through `QrProvider`): the
 * `QrConnection` interface, the `snapshot` it answers and the channel's capabilities. The actor
 * that implements it is `QrConnection.make`.
 */
import { type ChannelStateMachine, Messaging } from "@switchboard/domain"
import type { WAMessage } from "baileys"
import type { Effect, Queue, Scope, Stream } from "effect"
import type { InboundRef, MediaDownloadFailed } from "../ChannelProvider.js"
import type { QrCodeSnapshot } from "./QrCodes.js"
import type { QrConnectionError, QrConnectionEvent } from "./QrConnectionEvent.js"
import type { QrOutboundText } from "./QrOutbound.js"
import type { QrNotConnected, QrRecipientNotOnWhatsApp, QrSendFailed } from "./QrSendError.js"

/** What a QR channel can do (`Messaging.THROUGHPUT_MPS.qr` messages per second). */
export const qrCapabilities = {
  provider: "qr",
  max_throughput_mps: Messaging.THROUGHPUT_MPS.qr,
  message_types: Messaging.MESSAGE_TYPES.qr
} as const

/** Everything a `snapshot` frame needs. */
export interface QrSnapshot {
  readonly channelId: string
  readonly status: ChannelStateMachine.ChannelStatus
  readonly phoneNumber: string | null
  readonly qr: QrCodeSnapshot | null
  /** why the last attempt could not reach WhatsApp, until it is reached again or pairing restarts */
  readonly connectionError: QrConnectionError | null
}

export interface QrConnection {
  readonly channelId: string
  readonly capabilities: typeof qrCapabilities
  /** Status, phone number and the QR code showing now. */
  readonly snapshot: Effect.Effect<QrSnapshot>
  /** Events from the moment of subscription, until the scope closes. Subscribe before `start`. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<QrConnectionEvent>, never, Scope.Scope>
  /** The same as a stream (subscribes when run). */
  readonly events: Stream.Stream<QrConnectionEvent>
  /**
   * `qr/start`: (re)starts from scratch. Ends any socket, resets the reconnect budget, then logs in
   * with the stored link if there is one, else begins a pairing session (QR codes).
   */
  readonly start: Effect.Effect<void>
  /**
   * `qr/start` with `{method: "code", phone_number}`: as `start`, but WhatsApp's pairing code for
   * `phoneNumber` (E.164) replaces the QR codes (`QrPairingCode`).
   */
  readonly startWithCode: (phoneNumber: string) => Effect.Effect<void>
  /**
   * Runner (re)activation: connects with the stored link if there is one and no socket runs.
   * Never starts a pairing. Returns whether a stored link was found.
   */
  readonly resume: Effect.Effect<boolean>
  /**
   * Sends a text; succeeds once Baileys wrote it to WhatsApp (= `provider_accepted`). The first
   * send to a number checks that it is on WhatsApp (`QrRecipientCheck`).
   */
  readonly send: (
    message: QrOutboundText
  ) => Effect.Effect<void, QrNotConnected | QrSendFailed | QrRecipientNotOnWhatsApp>
  /**
   * Rejects a ringing call (`call_offer`) at WhatsApp; succeeds once WhatsApp acknowledged it.
   */
  readonly rejectCall: (callId: string, callerJid: string) => Effect.Effect<void, QrNotConnected | QrSendFailed>
  /** `qr/logout`: unlinks the device at WhatsApp (when connected) and wipes the stored link. */
  readonly logout: Effect.Effect<void>
  /**
   * Read receipts (blue ticks) for inbound messages, each to its sender's chat (`readerJid`);
   * succeeds once Baileys wrote them to WhatsApp.
   */
  readonly markRead: (messages: ReadonlyArray<InboundRef>) => Effect.Effect<void, QrNotConnected | QrSendFailed>
  /**
   * Asks the sender's phone to upload an inbound media again (WhatsApp's media host answered
   * 404/410); the message with the media's new location.
   */
  readonly reupload: (message: WAMessage) => Effect.Effect<WAMessage, MediaDownloadFailed>
  /**
   * Stops reading from WhatsApp (the socket's WebSocket paused, `reason` logged) until
   * `resumeInput`: the runner holds as much unrecorded input as it may. What WhatsApp did not get
   * acknowledged stays with it. Baileys drops a link it hears nothing on for the keep-alive
   * interval + 5 s (408) and reconnects, which reads again; the owner holds again at its next
   * item over the bound.
   */
  readonly holdInput: (reason: string) => Effect.Effect<void>
  readonly resumeInput: Effect.Effect<void>
}
