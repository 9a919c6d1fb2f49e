/**
 * What a QR connection reports to its owner (the Channel entity): QR codes, status changes,
 * expiry, receipts of our messages, inbound messages and LID mappings. Schemas, so the events can cross the
 * cluster (e.g. a `WatchPairing` stream) as they are. The QR code is `Redacted`: it prints as
 * `<redacted>` in any log line and is read with `Redacted.value` only where it is shown to the user.
 */
import {
  ChannelStateMachine,
  GroupChats,
  MessageContent,
  QrConnectionError as DomainQrConnectionError,
  Schemas
} from "@switchboard/domain"
import { Schema } from "effect"

/**
 * How the code links: absent for a QR code (the string to render as an image), `code` for
 * WhatsApp's 8-character pairing code typed on the phone (`QrPairingCode`). Optional, so events
 * of a node that predates pairing codes still decode.
 */
export const PairingMethodField = Schema.optional(Schema.Literal("code"))

/** A new QR code (or pairing code) to show; replaces the previous one. */
export const QrCodeEvent = Schema.TaggedStruct("qr", {
  channelId: Schema.String,
  code: Schema.Redacted(Schema.String),
  /** epoch ms after which the code no longer links */
  expiresAt: Schema.Number,
  /** 1 for the first code of a pairing session, then 2, 3, ... */
  sequence: Schema.Int,
  method: PairingMethodField
})
export type QrCodeEvent = typeof QrCodeEvent.Type

/** The last connection attempt could not reach WhatsApp: the domain's one shape (`QrConnectionError`). */
export const QrConnectionError = DomainQrConnectionError.QrConnectionError
export type QrConnectionError = DomainQrConnectionError.QrConnectionError

/** A connection attempt failed before reaching WhatsApp; another follows unless `nextAttemptAt` is `null`. */
export const QrConnectionErrorEvent = Schema.TaggedStruct("connection_error", {
  channelId: Schema.String,
  ...QrConnectionError.fields
})
export type QrConnectionErrorEvent = typeof QrConnectionErrorEvent.Type

/** The channel status changed. */
export const QrStateEvent = Schema.TaggedStruct("state", {
  channelId: Schema.String,
  from: ChannelStateMachine.ChannelStatus,
  to: ChannelStateMachine.ChannelStatus,
  reason: ChannelStateMachine.ChannelStatusReason,
  /** Baileys' close code when a close caused the change (401, 408, 428, 440, 503, ...) */
  closeCode: Schema.NullOr(Schema.Number),
  /** emit `channel.requires_repair`: the link is gone, only a new QR brings it back */
  requiresRepair: Schema.Boolean,
  /** the linked phone number once known, E.164 */
  phoneNumber: Schema.NullOr(Schemas.E164),
  /** why WhatsApp could not be reached, when that caused the change (the give-up after failed attempts) */
  connectionError: Schema.NullOr(QrConnectionError)
})
export type QrStateEvent = typeof QrStateEvent.Type

/** Every QR code of the pairing session expired unscanned (a `state` event to `disconnected` follows). */
export const QrExpiredEvent = Schema.TaggedStruct("expired", {
  channelId: Schema.String
})
export type QrExpiredEvent = typeof QrExpiredEvent.Type

/**
 * Progress of one of our messages. `messageId` is our id (it is the WhatsApp id too). A status
 * can be reported more than once across reconnects, and out of order: consumers never move a
 * message backwards.
 */
export const QrReceiptEvent = Schema.TaggedStruct("receipt", {
  channelId: Schema.String,
  messageId: Schema.String,
  status: Schema.Literal("sent", "delivered", "read"),
  /** epoch ms */
  at: Schema.Number
})
export type QrReceiptEvent = typeof QrReceiptEvent.Type

/**
 * WhatsApp refused one of our messages after Baileys wrote it (an ack with an error, e.g. 463):
 * what the message's failure is (`QrRestrictions.classifyAckError`).
 */
export const QrRejectedEvent = Schema.TaggedStruct("rejected", {
  channelId: Schema.String,
  messageId: Schema.String,
  /** the message's `failure.code` */
  code: Schema.String,
  reason: Schema.String,
  retryable: Schema.Boolean,
  /** epoch ms */
  at: Schema.Number
})
export type QrRejectedEvent = typeof QrRejectedEvent.Type

/**
 * WhatsApp reported a restriction of the number (docs/LIMITS.md, "Number protection"): a reach-out
 * timelock (`timelockUntil`: epoch ms; `null` once lifted) and/or its new-chat message quota;
 * `signal`: the status reason the report set (`account_restricted` for a 463 ack, `rate_limited`
 * for a 429, ...), shown as the channel's last restriction signal.
 */
export const QrRestrictionEvent = Schema.TaggedStruct("restriction", {
  channelId: Schema.String,
  signal: Schema.optional(ChannelStateMachine.QrRestrictionReason),
  /** epoch ms */
  at: Schema.optional(Schema.Number),
  timelockUntil: Schema.optional(Schema.NullOr(Schema.Number)),
  newChatQuota: Schema.optional(Schema.Struct({
    total: Schema.Number,
    used: Schema.Number,
    /** epoch ms when WhatsApp's quota cycle ends */
    cycleEndsAt: Schema.NullOr(Schema.Number)
  }))
})
export type QrRestrictionEvent = typeof QrRestrictionEvent.Type

/**
 * WhatsApp answered a recipient check (`QrRecipientCheck`): whether a number is on WhatsApp. Only
 * answers WhatsApp gave are reported, not those the connection remembered.
 */
export const QrRecipientCheckedEvent = Schema.TaggedStruct("recipient_checked", {
  channelId: Schema.String,
  phoneNumber: Schemas.E164,
  onWhatsApp: Schema.Boolean,
  /** epoch ms */
  at: Schema.Number
})
export type QrRecipientCheckedEvent = typeof QrRecipientCheckedEvent.Type

/**
 * A message someone sent to the linked number, of any kind (`InboundContent`, translated by
 * `BaileysInbound.fromBaileys`); delivered live (`notify`) or after a reconnect (`append`).
 */
export const QrInboundEvent = Schema.TaggedStruct("inbound", {
  channelId: Schema.String,
  content: MessageContent.InboundContent
})
export type QrInboundEvent = typeof QrInboundEvent.Type

/**
 * WhatsApp told the linked device which phone number is behind a LID (`lid-mapping.update`, or a
 * message that named both). Reported again when heard again; consumers store it idempotently.
 */
export const QrLidMappingEvent = Schema.TaggedStruct("lid_mapping", {
  channelId: Schema.String,
  /** the LID without the server part */
  whatsappLid: Schema.String,
  phoneNumber: Schemas.E164
})
export type QrLidMappingEvent = typeof QrLidMappingEvent.Type

/**
 * Someone calls the linked number (`QrCalls`): reported at once, so the owner can apply the
 * channel's call policy (`rejectCall`); the call's outcome follows as an `inbound` of type `call`.
 */
export const QrCallOfferEvent = Schema.TaggedStruct("call_offer", {
  channelId: Schema.String,
  /** WhatsApp's id of the call (the `call` message's provider id) */
  callId: Schema.String,
  /** the caller's JID as WhatsApp named it (what a rejection is addressed to) */
  callerJid: Schema.String,
  sender: MessageContent.InboundSender,
  video: Schema.Boolean,
  /** epoch ms */
  at: Schema.Number
})
export type QrCallOfferEvent = typeof QrCallOfferEvent.Type

/**
 * The group chats the linked number is in (`QrGroupChats`): every one when the link opens
 * (`complete`: a group not listed was left meanwhile), or those WhatsApp said changed; `left`: the
 * WhatsApp ids of groups our number is no longer in (removed, or it left).
 */
export const QrGroupChatsEvent = Schema.TaggedStruct("group_chats", {
  channelId: Schema.String,
  groupChats: Schema.Array(GroupChats.ProviderGroupChat),
  left: Schema.Array(Schema.String),
  complete: Schema.Boolean,
  /** epoch ms */
  at: Schema.Number
})
export type QrGroupChatsEvent = typeof QrGroupChatsEvent.Type

/** What a pairing watcher sees first: the status now and the code showing, if any. */
export const QrSnapshotEvent = Schema.TaggedStruct("snapshot", {
  channelId: Schema.String,
  status: ChannelStateMachine.ChannelStatus,
  phoneNumber: Schema.NullOr(Schema.String),
  qr: Schema.NullOr(Schema.Struct({
    code: Schema.Redacted(Schema.String),
    expiresAt: Schema.Number,
    sequence: Schema.Int,
    method: PairingMethodField
  })),
  connectionError: Schema.NullOr(QrConnectionError)
})
export type QrSnapshotEvent = typeof QrSnapshotEvent.Type

/**
 * A pairing watcher's stream (`WatchPairing`): a snapshot, then codes, status changes, expiry and
 * failed connection attempts.
 */
export const QrPairingFrame = Schema.Union(
  QrSnapshotEvent,
  QrCodeEvent,
  QrStateEvent,
  QrExpiredEvent,
  QrConnectionErrorEvent
)
export type QrPairingFrame = typeof QrPairingFrame.Type

export const QrConnectionEvent = Schema.Union(
  QrCodeEvent,
  QrStateEvent,
  QrExpiredEvent,
  QrConnectionErrorEvent,
  QrReceiptEvent,
  QrRejectedEvent,
  QrRestrictionEvent,
  QrRecipientCheckedEvent,
  QrInboundEvent,
  QrLidMappingEvent,
  QrCallOfferEvent,
  QrGroupChatsEvent
)
export type QrConnectionEvent = typeof QrConnectionEvent.Type
