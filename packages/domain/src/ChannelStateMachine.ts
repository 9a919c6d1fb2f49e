/**
 * The channel state machine, pure: every status change of a channel, whoever drives it (the QR
 * provider's link, the operator, `DELETE`), and which events follow it. Repositories run the
 * guarded SQL for a move decided here; they hold no rule of their own.
 *
 * ```
 * pending|any -qr/start-> connecting -first code-> awaiting_scan -scanned-> connected
 * awaiting_scan -codes exhausted-> disconnected   (a pairing code: -code issued-> awaiting_scan -typed-> connected)
 * connecting|awaiting_scan -number refused for a pairing code-> disconnected
 * connected -link lost-> degraded -back-> connected;  degraded -gave up-> disconnected
 * logged out from the phone -> disconnected (+ channel.requires_repair)
 * qr/logout -> disconnected;  operator -> suspended -reactivate-> connected (sandbox) | disconnected
 * DELETE -> archived (final; archiving is repeatable)
 * ```
 * `qr/start` restarts pairing from any state but `archived` and `suspended` (refused). The
 * platform's decisions (suspended, archived) outrank a provider's report.
 */
import { Schema } from "effect"
import type { Provider } from "./Messaging.js"

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

/** Why a channel changed status (`status_reason`, `qr.state.reason`, the `reason` of channel events). */
export const ChannelStatusReason = Schema.Literal(
  "pairing_started",
  "resumed",
  "qr_issued",
  "paired",
  "reconnected",
  "qr_expired",
  "pairing_code_issued",
  "pairing_code_expired",
  "phone_number_refused",
  "link_lost",
  "reconnect_budget_exhausted",
  "logged_out_from_phone",
  "pairing_interrupted",
  "connection_replaced",
  "logged_out",
  "forbidden",
  "client_outdated",
  "account_restricted",
  "reachout_timelocked",
  "rate_limited",
  "new_chats_capped",
  "restriction_lifted",
  "suspended",
  "reactivated",
  "archived"
).annotations({ identifier: "ChannelStatusReason" })
export type ChannelStatusReason = typeof ChannelStatusReason.Type

/** The status reasons of WhatsApp's restriction signals (the status itself does not change). */
export const QrRestrictionReason = Schema.Literal(
  "account_restricted",
  "reachout_timelocked",
  "rate_limited",
  "new_chats_capped",
  "restriction_lifted"
).annotations({ identifier: "QrRestrictionSignal" })
export type QrRestrictionReason = typeof QrRestrictionReason.Type

/** A send is accepted (queued) only on a connected channel (409 CHANNEL_NOT_CONNECTED otherwise). */
export const acceptsSends = (status: ChannelStatus): boolean => status === "connected"

/** The Channel entity dispatches queued messages only while connected. */
export const dispatches = (status: ChannelStatus): boolean => status === "connected"

/** Archiving cancels the channel's undispatched messages. */
export const isArchived = (status: ChannelStatus): boolean => status === "archived"

/** Statuses only the platform changes: a provider's report never moves a channel out of them. */
/**
 * A move for this reason ends the link for good (`qr/logout`, or the device unlinked on the phone):
 * the channel no longer stands for its number until it pairs again, so its group chats show
 * `is_participant: false` (docs/API.md "Group chats") until the next link reports them.
 */
export const forgetsLink = (reason: ChannelStatusReason): boolean =>
  reason === "logged_out" || reason === "logged_out_from_phone"

export const PLATFORM_HELD_STATUSES: ReadonlyArray<ChannelStatus> = ["archived", "suspended"]

/** What happened to the channel. */
export type ChannelInput =
  /** `qr/start`: begin or restart pairing (or reconnect with a stored link) */
  | { readonly _tag: "Start" }
  /** a runner (re)activated a channel that has a stored link */
  | { readonly _tag: "Resume" }
  /** a QR code was produced, or WhatsApp's pairing code for a number (`pairingCode`) */
  | { readonly _tag: "CodeIssued"; readonly pairingCode?: boolean }
  /** the link is open */
  | { readonly _tag: "Opened" }
  /** every QR code expired unscanned, or the pairing code was never typed in time (`pairingCode`) */
  | { readonly _tag: "CodesExhausted"; readonly pairingCode?: boolean }
  /** WhatsApp refused to give a pairing code for the number (not an account it links) */
  | { readonly _tag: "PairingCodeRefused" }
  /** a transient close (network, stream error); a reconnect is scheduled */
  | { readonly _tag: "LinkLost" }
  /**
   * a new owner (runner restart, failover) found no stored link for a channel that was pairing or
   * linked: the pairing cannot go on; a lost link needs a new QR
   */
  | { readonly _tag: "Interrupted" }
  /** the reconnect budget is spent */
  | { readonly _tag: "GaveUp" }
  /** the phone removed this device (close 401 we did not ask for) */
  | { readonly _tag: "LoggedOutFromPhone" }
  /** a terminal close that keeps the link: replaced (440), forbidden (403, 411), outdated client (405) */
  | { readonly _tag: "Terminated"; readonly reason: "connection_replaced" | "forbidden" | "client_outdated" }
  /**
   * WhatsApp reported a restriction on the number, or its end (docs/LIMITS.md, "Number
   * protection"): the status stays, its reason says what the number may not do now. A restricted
   * number still answers existing conversations, so nothing here stops it sending.
   */
  | { readonly _tag: "Restriction"; readonly reason: QrRestrictionReason }
  /** `qr/logout` */
  | { readonly _tag: "Logout" }
  /** the operator suspends the channel (it stops sending; a QR link is kept) */
  | { readonly _tag: "Suspend" }
  /**
   * the operator reactivates it: a sandbox channel is connected again, any other waits
   * `disconnected` for `qr/start` (which logs in with a kept link without a code)
   */
  | { readonly _tag: "Reactivate"; readonly provider: Provider }
  /** `DELETE /v1/channels/{id}` */
  | { readonly _tag: "Archive" }

/** A status change that happened. */
export interface ChannelMove {
  readonly _tag: "Moved"
  readonly from: ChannelStatus
  readonly to: ChannelStatus
  readonly reason: ChannelStatusReason
  /** emit `channel.requires_repair`: the link is gone and only a new QR brings it back */
  readonly requiresRepair: boolean
}

export type ChannelTransition =
  | ChannelMove
  | { readonly _tag: "Unchanged"; readonly status: ChannelStatus }
  | {
    readonly _tag: "Refused"
    readonly status: ChannelStatus
    readonly reason: "channel_archived" | "channel_suspended"
  }

const moved = (
  from: ChannelStatus,
  to: ChannelStatus,
  reason: ChannelStatusReason,
  requiresRepair = false
): ChannelTransition =>
  from === to && !requiresRepair
    ? { _tag: "Unchanged", status: from }
    : { _tag: "Moved", from, to, reason, requiresRepair }

const unchanged = (status: ChannelStatus): ChannelTransition => ({ _tag: "Unchanged", status })

/** Statuses in which the provider has (or is getting) a live link. */
const LIVE: ReadonlyArray<ChannelStatus> = ["connecting", "awaiting_scan", "connected", "degraded"]

/** The next status. Inputs that do not apply in a status leave it unchanged (stale socket events). */
export const transitionChannel = (status: ChannelStatus, input: ChannelInput): ChannelTransition => {
  if (status === "archived") {
    return input._tag === "Start" ? { _tag: "Refused", status, reason: "channel_archived" } : unchanged(status)
  }
  if (status === "suspended" && input._tag !== "Archive" && input._tag !== "Reactivate") {
    return input._tag === "Start" ? { _tag: "Refused", status, reason: "channel_suspended" } : unchanged(status)
  }
  switch (input._tag) {
    case "Start":
      return { _tag: "Moved", from: status, to: "connecting", reason: "pairing_started", requiresRepair: false }
    case "Resume":
      return status === "connected" || status === "degraded"
        ? unchanged(status)
        : moved(status, "connecting", "resumed")
    case "CodeIssued":
      return status === "connecting"
        ? moved(status, "awaiting_scan", input.pairingCode === true ? "pairing_code_issued" : "qr_issued")
        : unchanged(status)
    case "Opened":
      return status === "connected" || !LIVE.includes(status)
        ? unchanged(status)
        : moved(status, "connected", status === "awaiting_scan" ? "paired" : "reconnected")
    case "CodesExhausted":
      return status === "connecting" || status === "awaiting_scan"
        ? moved(status, "disconnected", input.pairingCode === true ? "pairing_code_expired" : "qr_expired")
        : unchanged(status)
    case "PairingCodeRefused":
      return status === "connecting" || status === "awaiting_scan"
        ? moved(status, "disconnected", "phone_number_refused")
        : unchanged(status)
    case "LinkLost":
      return status === "connected" ? moved(status, "degraded", "link_lost") : unchanged(status)
    case "Interrupted":
      return LIVE.includes(status)
        ? moved(status, "disconnected", "pairing_interrupted", status === "connected" || status === "degraded")
        : unchanged(status)
    case "GaveUp":
      return LIVE.includes(status) ? moved(status, "disconnected", "reconnect_budget_exhausted") : unchanged(status)
    case "LoggedOutFromPhone":
      return moved(status, "disconnected", "logged_out_from_phone", true)
    case "Terminated":
      // an outdated client needs an operator (a current WhatsApp Web version), not a retry
      return LIVE.includes(status)
        ? moved(status, "disconnected", input.reason, input.reason === "client_outdated")
        : unchanged(status)
    case "Restriction":
      // the reason changes on a live link only; the status stays what it is
      return status === "connected" || status === "degraded"
        ? { _tag: "Moved", from: status, to: status, reason: input.reason, requiresRepair: false }
        : unchanged(status)
    case "Logout":
      return moved(status, "disconnected", "logged_out")
    case "Suspend":
      return moved(status, "suspended", "suspended")
    case "Reactivate":
      return status === "suspended"
        ? moved(status, input.provider === "sandbox" ? "connected" : "disconnected", "reactivated")
        : unchanged(status)
    case "Archive":
      return moved(status, "archived", "archived")
  }
}

/** The events of a status change (each carries `from_status`, `to_status`, `reason`). */
export type ChannelMoveEventType =
  | "channel.connected"
  | "channel.disconnected"
  | "channel.requires_repair"
  | "channel.archived"

/**
 * Which events follow a move: `channel.connected` on reaching connected; `channel.disconnected` on
 * reaching disconnected (not from a suspension: that one was reported when it began) and when a
 * channel that could send is suspended; `channel.requires_repair` when the link is gone for good;
 * `channel.archived` on archiving.
 */
export const channelMoveEvents = (move: ChannelMove): ReadonlyArray<ChannelMoveEventType> => {
  const types: Array<ChannelMoveEventType> = []
  if (move.to === "connected" && move.from !== "connected") types.push("channel.connected")
  if (
    (move.to === "disconnected" && move.from !== "disconnected" && move.from !== "suspended") ||
    (move.to === "suspended" && (move.from === "connected" || move.from === "degraded"))
  ) types.push("channel.disconnected")
  if (move.requiresRepair) types.push("channel.requires_repair")
  if (move.to === "archived") types.push("channel.archived")
  return types
}
