/**
 * Channel statuses (SPEC 2.6), pure. The transitions of DECISIONS 5 live in one place,
 * `transitionQrPairing` (QrPairing.ts): providers drive the pairing part, the platform drives
 * archive and suspension. `archived` is final; archiving is repeatable (SPEC 3.2).
 */
import { Schema } from "effect"

export const CHANNEL_STATUSES = [
  "pending",
  "connecting",
  "awaiting_scan",
  "connected",
  "degraded",
  "disconnected",
  "suspended",
  "archived"
] as const
export const ChannelStatus = Schema.Literal(...CHANNEL_STATUSES).annotations({ identifier: "ChannelStatus" })
export type ChannelStatus = typeof ChannelStatus.Type

/** A send is accepted (queued) only on a connected channel (409 CHANNEL_NOT_CONNECTED otherwise). */
export const acceptsSends = (status: ChannelStatus): boolean => status === "connected"

/** The Channel entity dispatches queued messages only while connected. */
export const dispatches = (status: ChannelStatus): boolean => status === "connected"

/** Archiving cancels the channel's undispatched messages. */
export const isArchived = (status: ChannelStatus): boolean => status === "archived"
