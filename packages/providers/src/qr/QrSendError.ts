/** Why a QR send did not reach WhatsApp. Both are retryable: the message was not accepted. */
import { Schema } from "effect"

/** The channel has no open link right now (pairing, reconnecting, disconnected). */
export class QrNotConnected extends Schema.TaggedError<QrNotConnected>()("QrNotConnected", {
  channelId: Schema.String,
  status: Schema.String
}) {}

/** Baileys failed to send (a query timed out, the link dropped mid-send, ...). */
export class QrSendFailed extends Schema.TaggedError<QrSendFailed>()("QrSendFailed", {
  channelId: Schema.String,
  messageId: Schema.String,
  reason: Schema.String
}) {}

export type QrSendError = QrNotConnected | QrSendFailed
