/**
 * Why a QR send did not reach WhatsApp. The first two are retryable (the message was not
 * accepted); a recipient not on WhatsApp is not.
 */
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

/** The number is not on WhatsApp (`QrRecipientCheck`): nothing was sent, and a retry cannot help. */
export class QrRecipientNotOnWhatsApp extends Schema.TaggedError<QrRecipientNotOnWhatsApp>()(
  "QrRecipientNotOnWhatsApp",
  { channelId: Schema.String, messageId: Schema.String }
) {}

export type QrSendError = QrNotConnected | QrSendFailed | QrRecipientNotOnWhatsApp
