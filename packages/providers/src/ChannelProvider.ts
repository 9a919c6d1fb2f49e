/**
 * What every channel provider offers the Channel entity that owns its connection. The sandbox implements it now; the QR (Baileys) provider plugs in the same way.
 *
 * - `send` uses OUR message id as the provider's message id, so a repeated dispatch of the same
 *   message (after a crash, a failover) is recognised by the provider and never delivered twice.
 * - `events` carries receipts of our messages (sent, delivered, read) and inbound messages. A
 *   receipt may come more than once (after a reconnect) and out of order: the guarded move
 *   never moves a message back (docs/ARCHITECTURE.md "One writer per message, by statement"). An inbound message carries the provider's id for deduplication.
 * - `capabilities.max_throughput_mps` paces the Channel entity's token bucket.
 */
import {
  type ChannelStateMachine,
  type GroupChats,
  MessageContent,
  MessageStateMachine,
  type Messaging
} from "@switchboard/domain"
import type { Effect, Queue, Scope, Stream } from "effect"
import { Schema } from "effect"
import type { QrSnapshot } from "./qr/QrConnection.js"
import type { QrConnectionEvent } from "./qr/QrConnectionEvent.js"

export interface OutgoingMessage {
  /** our message id, used as the provider's message id */
  readonly id: string
  readonly to: string
  /** the text, or a file's caption ("" when none) */
  readonly body: string
  /** what to send (a file's bytes are read from the media store by `content.mediaId`); text when absent */
  readonly content?: MessageContent.OutgoingBody
  /** the message this one quotes, by the provider's id */
  readonly quoted?: MessageContent.ProviderMessageRef | null
}

/** The provider took the message; receipts follow on `events`. */
export interface Accepted {
  readonly _tag: "Accepted"
}

/** The provider refused the message. Retryable failures are dispatched again with backoff. */
export interface Refused {
  readonly _tag: "Refused"
  readonly retryable: boolean
  /** machine-readable, becomes the message's `failure.code` */
  readonly code: string
  /** a sentence, becomes the message's `failure.reason` */
  readonly reason: string
}

export type SendResult = Accepted | Refused

export const accepted: SendResult = { _tag: "Accepted" }

export const refused = (retryable: boolean, code: string, reason: string): SendResult => ({
  _tag: "Refused",
  retryable,
  code,
  reason
})

/** Progress of one of our messages. */
export const Receipt = Schema.TaggedStruct("Receipt", {
  messageId: Schema.String,
  status: Schema.Literal(...MessageStateMachine.RECEIPT_STATUSES),
  /** epoch ms */
  at: Schema.Number
})
export interface Receipt extends Schema.Schema.Type<typeof Receipt> {}

/**
 * A message someone sent to the channel's number, of any kind, in the provider-neutral form
 * (`InboundContent`: sender, body, quoted message, time).
 */
export const Inbound = Schema.TaggedStruct("Inbound", MessageContent.InboundContent.fields)
export interface Inbound extends Schema.Schema.Type<typeof Inbound> {}

/** The `InboundContent` of an inbound event. */
export const inboundContent = (event: Inbound): MessageContent.InboundContent => ({
  providerMessageId: event.providerMessageId,
  sender: event.sender,
  body: event.body,
  quotedProviderMessageId: event.quotedProviderMessageId,
  at: event.at,
  ...(event.groupChat == null ? {} : { groupChat: event.groupChat }),
  ...(event.mentions === undefined ? {} : { mentions: event.mentions })
})

/** An inbound text from a phone number (the common case; tests, simulated networks). */
export const inboundText = (providerMessageId: string, from: string, body: string, at: number): Inbound => ({
  _tag: "Inbound",
  providerMessageId,
  sender: { phoneNumber: from, whatsappLid: null },
  body: { _tag: "text", body },
  quotedProviderMessageId: null,
  at
})

/**
 * Why the bytes of an inbound media could not be fetched from the provider. `retryable`: a later
 * attempt may succeed (network, media host busy, link down); otherwise it is permanent (the media
 * expired at the provider, the source is unusable) and the media is marked `failed` at once.
 */
export class MediaDownloadFailed extends Schema.TaggedError<MediaDownloadFailed>()("MediaDownloadFailed", {
  retryable: Schema.Boolean,
  /** a sentence, becomes the media's `failure_reason` (never a secret, never the bytes) */
  reason: Schema.String
}) {}

/** A call could not be rejected (no open link, or the provider failed): it rings on. */
export class CallRejectFailed extends Schema.TaggedError<CallRejectFailed>()("CallRejectFailed", {
  reason: Schema.String
}) {}

/**
 * The provider's link changed the channel's status (QR: pairing, link lost, logged out). The
 * owner records it on the channel with its events, in the order reported.
 */
export interface StatusChanged {
  readonly _tag: "StatusChanged"
  readonly from: ChannelStateMachine.ChannelStatus
  readonly to: ChannelStateMachine.ChannelStatus
  readonly reason: ChannelStateMachine.ChannelStatusReason
  /** the link is gone: only a new pairing brings it back (`channel.requires_repair`) */
  readonly requiresRepair: boolean
  /** the linked number, E.164, once known */
  readonly phoneNumber: string | null
}

/**
 * The provider refused one of our messages after taking it (QR: WhatsApp's ack carried an error,
 * e.g. 463): the owner fails it, or re-queues it when `retryable`.
 */
export interface SendRejected {
  readonly _tag: "SendRejected"
  readonly messageId: string
  /** machine-readable, becomes the message's `failure.code` */
  readonly code: string
  /** a sentence, becomes the message's `failure.reason` */
  readonly reason: string
  readonly retryable: boolean
}

/**
 * WhatsApp revealed the phone number behind a LID (QR: `lid-mapping.update`, a message's
 * `remoteJidAlt`): the owner keeps it and merges contacts (`LidMappings.learn`).
 */
export interface LidMapped {
  readonly _tag: "LidMapped"
  /** without the server part, e.g. `123456789012345` */
  readonly lid: string
  /** E.164 */
  readonly phoneNumber: string
}

/**
 * The provider reported a restriction of the number (QR: WhatsApp's reach-out timelock, its
 * new-chat quota). The owner records it on the channel; new-contact sends are refused meanwhile.
 */
export interface RestrictionReported {
  readonly _tag: "RestrictionReported"
  /** the status reason the report set, shown as the channel's last restriction signal; absent: none */
  readonly signal?: ChannelStateMachine.QrRestrictionReason | undefined
  /** epoch ms of the signal */
  readonly at?: number | undefined
  /** epoch ms the timelock ends; `null` once lifted; absent when not reported */
  readonly timelockUntil?: number | null | undefined
  readonly newChatQuota?:
    | { readonly total: number; readonly used: number; readonly cycleEndsAt: number | null }
    | undefined
}

/**
 * The provider found out whether a number is on WhatsApp (QR: the check before a channel's first
 * send to it). The owner keeps the answer for the channel and on the workspace's contact.
 */
export interface RecipientChecked {
  readonly _tag: "RecipientChecked"
  /** E.164 */
  readonly phoneNumber: string
  readonly onWhatsApp: boolean
  /** epoch ms */
  readonly at: number
}

/**
 * Someone calls the channel's number (QR). The owner applies the channel's call policy: when it
 * rejects calls, it rejects this one (`rejectCall`) and records it as `rejected`; otherwise the
 * call's outcome comes later as an `Inbound` of type `call` with the same `providerMessageId`.
 */
export interface CallOffered {
  readonly _tag: "CallOffered"
  /** the provider's id of the call: the `call` message's provider id */
  readonly providerMessageId: string
  /** the caller's address as the provider named it (what a rejection is addressed to) */
  readonly callerAddress: string
  readonly sender: MessageContent.InboundSender
  readonly video: boolean
  /** epoch ms */
  readonly at: number
}

/**
 * The group chats the number is in (QR; docs/QR-CHANNELS.md "Group chats"): all of them when the
 * link opens (`complete`: any other group chat of the channel was left), or those that changed;
 * `left`: the provider's ids of group chats the number is no longer in. The owner keeps them.
 */
export interface GroupChatsReported {
  readonly _tag: "GroupChatsReported"
  readonly groupChats: ReadonlyArray<GroupChats.ProviderGroupChat>
  readonly left: ReadonlyArray<string>
  readonly complete: boolean
  /** epoch ms */
  readonly at: number
}

export type ProviderEvent =
  | GroupChatsReported
  | Receipt
  | Inbound
  | CallOffered
  | StatusChanged
  | SendRejected
  | LidMapped
  | RestrictionReported
  | RecipientChecked

export const receipt = (messageId: string, status: MessageStateMachine.ReceiptStatus, at: number): ProviderEvent => ({
  _tag: "Receipt",
  messageId,
  status,
  at
})

export interface ProviderCapabilities {
  /** messages per second the provider accepts on one channel */
  readonly max_throughput_mps: number
  readonly message_types: ReadonlyArray<string>
}

/** Pairing of a linked-device channel (QR): what the owner's pairing routes drive. */
export interface Pairing {
  /** status, number and the QR code showing now */
  readonly snapshot: Effect.Effect<QrSnapshot>
  /** pairing events from now on (codes, status changes, expiry), until the scope closes */
  readonly subscribe: Effect.Effect<Queue.Dequeue<QrConnectionEvent>, never, Scope.Scope>
  /** begins or restarts pairing (or logs in again with a stored link) */
  readonly start: Effect.Effect<void>
  /**
   * as `start`, but linking by WhatsApp's pairing code for `phoneNumber` (E.164) instead of QR
   * codes; absent where a provider cannot
   */
  readonly startWithCode?: (phoneNumber: string) => Effect.Effect<void>
  /** unlinks the device and forgets the link */
  readonly logout: Effect.Effect<void>
}

/** An inbound message as the provider knows it: its id and its sender (number or LID). */
export interface InboundRef {
  readonly providerMessageId: string
  readonly phoneNumber: string | null
  readonly whatsappLid: string | null
  /** a group chat's message: WhatsApp's id of the group (the sender is the participant who wrote) */
  readonly whatsappGroupId?: string | undefined
}

/** What a simulated network delivers (`simulateInbound`). */
export interface SimulatedInbound {
  readonly from: string
  readonly body: MessageContent.InboundBody
  readonly quotedProviderMessageId: string | null
  /** a simulated group chat the message is written in (`from`: a participant) */
  readonly groupChat?: GroupChats.InboundGroupChat | undefined
  /** in a group chat: the numbers of the participants it mentions */
  readonly mentions?: ReadonlyArray<string> | undefined
  /** the id the network gives the message (the caller finds it by it once recorded); one of its own when absent */
  readonly providerMessageId?: string
}

export interface ChannelConnection {
  readonly capabilities: ProviderCapabilities
  readonly send: (message: OutgoingMessage) => Effect.Effect<SendResult>
  readonly events: Stream.Stream<ProviderEvent>
  /** receipts the connection still expects to report (the owner stays alive while > 0) */
  readonly pendingReceipts: Effect.Effect<number>
  /**
   * Sends read receipts (blue ticks) for inbound messages the business read, by the provider's
   * ids and their senders. Absent: the provider has no read receipts.
   */
  readonly markRead?: (messages: ReadonlyArray<InboundRef>) => Effect.Effect<void>
  /** Rejects a ringing call (`CallOffered`). Absent: the provider hears no calls. */
  readonly rejectCall?: (call: CallOffered) => Effect.Effect<void, CallRejectFailed>
  /** simulated networks only: someone writes to the channel's number (any kind) */
  readonly simulateInbound?: (input: SimulatedInbound) => Effect.Effect<void>
  /**
   * The connection holds nothing a new one would not get back (simulated networks: what is under
   * way is replayed from the network's rows on connect), so an owner with nothing to do may close
   * it and connect again on its next work. A linked device (QR) never is: its link is the channel.
   */
  readonly dropWhenIdle?: boolean
  /** linked-device providers only (QR) */
  readonly pairing?: Pairing
  /**
   * Stops reading from the provider until `resumeInput`, saying why: the runner holds as much
   * unrecorded input as it may (`ProviderInputBacklog`). What the provider has not handed over
   * stays with it (WhatsApp keeps what a companion did not acknowledge and delivers it at its next
   * login). Absent: the provider cannot be held, and only the runner's readiness says so.
   */
  readonly holdInput?: (reason: string) => Effect.Effect<void>
  readonly resumeInput?: Effect.Effect<void>
}

export interface ChannelProvider {
  /**
   * Opens the channel's connection; it lives as long as the scope. Called for a channel in any
   * status but archived and suspended; a linked-device provider resumes a stored link here.
   */
  readonly connect: (channel: Messaging.Channel) => Effect.Effect<ChannelConnection, never, Scope.Scope>
  /** The channel is archived: drop whatever the provider stores for it (linked-device credentials). */
  readonly forget?: (channel: Messaging.Channel) => Effect.Effect<void>
  /**
   * Streams the bytes of an inbound media the provider reported (`InboundMedia.source`, as stored
   * with the durable download job; it may run on another runner than the one that heard the
   * message, and after a restart). The caller checks size and hash and stores the bytes; it
   * retries a `retryable` failure a bounded number of times.
   */
  readonly downloadMedia?: (channelId: string, source: unknown) => Stream.Stream<Uint8Array, MediaDownloadFailed>
}

/**
 * The `failure.code` of a message a provider throttled (it refused for speed, not for the message):
 * retryable, dispatched again with backoff.
 */
export const PROVIDER_RATE_LIMITED = "PROVIDER_RATE_LIMITED"

/** WhatsApp's throttling answers, as Baileys reports them (`rate-overlimit`, HTTP-like 429). */
const THROTTLED = /rate[-_ ]?overlimit|too many requests|\b429\b/i

/** Whether a QR send's failure is WhatsApp throttling the channel. */
export const isThrottled = (reason: string): boolean => THROTTLED.test(reason)

/** A QR send that failed: throttled by WhatsApp (`PROVIDER_RATE_LIMITED`) or another provider error. */
export const qrSendRefusal = (reason: string): SendResult =>
  THROTTLED.test(reason)
    ? refused(true, PROVIDER_RATE_LIMITED, "WhatsApp throttled this channel's sends")
    : refused(true, "provider_error", `WhatsApp did not take it: ${reason}`)
