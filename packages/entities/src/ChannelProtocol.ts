/**
 * The Channel entity's protocol: what the api node (a cluster client) and the runners say to a
 * channel's entity. No provider connection or Baileys is loaded from here (the live handlers are
 * in `ChannelEntity.ts`).
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { ChannelStateMachine, GroupChats, MessageContent, Schemas } from "@switchboard/domain"
import { QrConnectionEvent } from "@switchboard/providers/contract"
import { Schema } from "effect"

/**
 * Volatile nudge: there may be due work. A send names its message, so the dispatch joins the
 * send's trace (when tracing is on); the payload may be absent (the sweepers, older nodes).
 */
export const Wake = Rpc.make("Wake", {
  payload: Schema.Union(Schema.Struct({ message_id: Schema.String }), Schema.Void)
})

/**
 * Simulated networks only: someone writes to the channel's number (any kind, docs/API.md "Messages";
 * `quoted_provider_message_id`: the message it quotes; `provider_message_id`: the id the network
 * gives it, so the caller finds the message once recorded; one of its own when absent). Answers
 * false when the channel cannot simulate it.
 */
export const SimulateInbound = Rpc.make("SimulateInbound", {
  payload: {
    from: Schemas.E164,
    body: MessageContent.InboundBody,
    quoted_provider_message_id: Schema.NullOr(Schema.String),
    /** a simulated group chat (WhatsApp's id of it) the message is written in; `from` is a participant */
    group_chat: Schema.optional(GroupChats.InboundGroupChat),
    /** in a group chat: the participants it mentions */
    mentions: Schema.optional(Schema.Array(Schemas.E164)),
    provider_message_id: Schema.optional(Schema.String)
  },
  success: Schema.Boolean
})

/**
 * Read receipts for inbound messages the business read (docs/API.md "Conversations"): answers false
 * when the channel has no connection now or its provider has no read receipts.
 */
export const MarkRead = Rpc.make("MarkRead", {
  payload: {
    messages: Schema.Array(Schema.Struct({
      provider_message_id: Schema.String,
      phone_number: Schema.NullOr(Schema.String),
      whatsapp_lid: Schema.NullOr(Schema.String),
      /** a group chat's message: WhatsApp's id of the group (the sender is its participant) */
      whatsapp_group_id: Schema.optional(Schema.String)
    }))
  },
  success: Schema.Boolean
})

export class ChannelRuntime extends Schema.Class<ChannelRuntime>("ChannelRuntime")({
  /**
   * The entity holds a provider connection now. Activation connects; a sandbox channel with nothing
   * to do closes it after a while (`ConnectionIdleTime`) and answers false until its next work.
   */
  connected: Schema.Boolean,
  keep_alive: Schema.Boolean,
  pending_receipts: Schema.Number
}) {}

/** What the entity is doing right now (diagnostics, tests). */
export const Status = Rpc.make("Status", { success: ChannelRuntime })

/** The channel has no pairing here: not a QR channel, or archived or suspended. */
export class PairingUnavailable extends Schema.TaggedError<PairingUnavailable>()("PairingUnavailable", {
  status: Schema.String
}) {}

/** Pairing as the entity sees it now (never the code). `qr_expires_at`: epoch ms. */
export class PairingView extends Schema.Class<PairingView>("PairingView")({
  status: ChannelStateMachine.ChannelStatus,
  qr_available: Schema.Boolean,
  qr_expires_at: Schema.NullOr(Schema.Number),
  phone_number: Schema.NullOr(Schema.String),
  /** why the last attempt could not reach WhatsApp (`nextAttemptAt`: epoch ms) */
  connection_error: Schema.NullOr(QrConnectionEvent.QrConnectionError),
  /** a pairing code shows instead of a QR code (optional: a runner that predates them omits it) */
  pairing_code_available: Schema.optional(Schema.Boolean),
  pairing_code_expires_at: Schema.optional(Schema.NullOr(Schema.Number))
}) {}

/**
 * `qr/start`: begins or restarts pairing; answers once the new status is recorded. With
 * `pairing_code_for` (E.164), WhatsApp's pairing code for that number replaces the QR codes.
 */
export const StartPairing = Rpc.make("StartPairing", {
  payload: { pairing_code_for: Schema.optional(Schema.String) },
  success: PairingView,
  error: PairingUnavailable
})

/** `qr/logout`: unlinks the device and forgets the link. */
export const LogoutPairing = Rpc.make("LogoutPairing", { success: PairingView, error: PairingUnavailable })

/** `qr/status` */
export const PairingStatus = Rpc.make("PairingStatus", { success: PairingView, error: PairingUnavailable })

/** `qr/stream`: a snapshot, then QR codes, status changes and expiry, while the caller listens. */
export const WatchPairing = Rpc.make("WatchPairing", {
  success: QrConnectionEvent.QrPairingFrame,
  error: PairingUnavailable,
  stream: true
})

export const ChannelEntity = Entity.make("Channel", [
  Wake,
  SimulateInbound,
  MarkRead,
  Status,
  StartPairing,
  LogoutPairing,
  PairingStatus,
  WatchPairing
])
