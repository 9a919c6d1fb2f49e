/**
 * Channel statuses and the transitions of DECISIONS 5, pure. Providers drive the pairing part
 * (QR: pending -> connecting -> awaiting_scan -> connected ...); the platform drives archive and
 * suspension. `archived` is final; archiving is repeatable (SPEC 3.2) and is not a transition.
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

/** From-states allowed for each target status. */
export const CHANNEL_ALLOWED_FROM: Record<ChannelStatus, ReadonlyArray<ChannelStatus>> = {
  pending: [],
  // qr/start restarts pairing from any state but archived and suspended
  connecting: ["pending", "connecting", "awaiting_scan", "connected", "degraded", "disconnected"],
  awaiting_scan: ["connecting", "awaiting_scan"],
  connected: ["awaiting_scan", "degraded", "connecting"],
  degraded: ["connected"],
  disconnected: ["connecting", "awaiting_scan", "connected", "degraded"],
  suspended: ["pending", "connecting", "awaiting_scan", "connected", "degraded", "disconnected"],
  archived: ["pending", "connecting", "awaiting_scan", "connected", "degraded", "disconnected", "suspended"]
}

export const canChannelTransition = (from: ChannelStatus, to: ChannelStatus): boolean =>
  CHANNEL_ALLOWED_FROM[to].includes(from)

/** A send is accepted (queued) only on a connected channel (409 CHANNEL_NOT_CONNECTED otherwise). */
export const acceptsSends = (status: ChannelStatus): boolean => status === "connected"

/** The Channel entity dispatches queued messages only while connected. */
export const dispatches = (status: ChannelStatus): boolean => status === "connected"

/** Archiving cancels the channel's undispatched messages. */
export const isArchived = (status: ChannelStatus): boolean => status === "archived"
