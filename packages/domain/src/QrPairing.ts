/**
 * The QR channel's pairing state machine (DECISIONS 5), pure:
 *
 * ```
 * pending|any -qr/start-> connecting -first code-> awaiting_scan -scanned-> connected
 * awaiting_scan -codes exhausted-> disconnected
 * connected -link lost-> degraded -back-> connected;  degraded -gave up-> disconnected
 * logged out from the phone -> disconnected (+ channel.requires_repair)
 * qr/logout -> disconnected;  operator -> suspended;  DELETE -> archived
 * ```
 * `qr/start` restarts pairing from any state but `archived` and `suspended` (refused).
 */
import { Schema } from "effect"
import { ChannelStatus } from "./ChannelStateMachine.js"

/** The channel statuses of SPEC 2.6 (one definition: `ChannelStatus`). */
export const QrChannelStatus = ChannelStatus
export type QrChannelStatus = ChannelStatus

/** Why a QR channel changed status (`status_reason`, `qr.state.reason`). */
export const QrStatusReason = Schema.Literal(
  "pairing_started",
  "resumed",
  "qr_issued",
  "paired",
  "reconnected",
  "qr_expired",
  "link_lost",
  "reconnect_budget_exhausted",
  "logged_out_from_phone",
  "pairing_interrupted",
  "connection_replaced",
  "logged_out",
  "forbidden",
  "client_outdated",
  "suspended",
  "archived"
)
export type QrStatusReason = typeof QrStatusReason.Type

/** What happened to the channel. */
export type QrPairingEvent =
  /** `qr/start`: begin or restart pairing (or reconnect with a stored link) */
  | { readonly _tag: "Start" }
  /** a runner (re)activated a channel that has a stored link */
  | { readonly _tag: "Resume" }
  /** a QR code was produced */
  | { readonly _tag: "CodeIssued" }
  /** the link is open */
  | { readonly _tag: "Opened" }
  /** every QR code expired unscanned */
  | { readonly _tag: "CodesExhausted" }
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
  /** `qr/logout` */
  | { readonly _tag: "Logout" }
  | { readonly _tag: "Suspend" }
  | { readonly _tag: "Archive" }

export type QrTransition =
  | {
    readonly _tag: "Moved"
    readonly from: QrChannelStatus
    readonly to: QrChannelStatus
    readonly reason: QrStatusReason
    /** emit `channel.requires_repair`: the link is gone and only a new QR brings it back */
    readonly requiresRepair: boolean
  }
  | { readonly _tag: "Unchanged"; readonly status: QrChannelStatus }
  | {
    readonly _tag: "Refused"
    readonly status: QrChannelStatus
    readonly reason: "channel_archived" | "channel_suspended"
  }

const moved = (
  from: QrChannelStatus,
  to: QrChannelStatus,
  reason: QrStatusReason,
  requiresRepair = false
): QrTransition =>
  from === to && !requiresRepair
    ? { _tag: "Unchanged", status: from }
    : { _tag: "Moved", from, to, reason, requiresRepair }

const unchanged = (status: QrChannelStatus): QrTransition => ({ _tag: "Unchanged", status })

/** Statuses in which the provider has (or is getting) a live link. */
const LIVE: ReadonlyArray<QrChannelStatus> = ["connecting", "awaiting_scan", "connected", "degraded"]

/** The next status. Events that do not apply in a status leave it unchanged (stale socket events). */
export const transitionQrPairing = (status: QrChannelStatus, event: QrPairingEvent): QrTransition => {
  if (status === "archived") {
    return event._tag === "Start" ? { _tag: "Refused", status, reason: "channel_archived" } : unchanged(status)
  }
  if (status === "suspended" && event._tag !== "Archive") {
    return event._tag === "Start" ? { _tag: "Refused", status, reason: "channel_suspended" } : unchanged(status)
  }
  switch (event._tag) {
    case "Start":
      return { _tag: "Moved", from: status, to: "connecting", reason: "pairing_started", requiresRepair: false }
    case "Resume":
      return status === "connected" || status === "degraded"
        ? unchanged(status)
        : moved(status, "connecting", "resumed")
    case "CodeIssued":
      return status === "connecting" ? moved(status, "awaiting_scan", "qr_issued") : unchanged(status)
    case "Opened":
      return status === "connected" || !LIVE.includes(status)
        ? unchanged(status)
        : moved(status, "connected", status === "awaiting_scan" ? "paired" : "reconnected")
    case "CodesExhausted":
      return status === "connecting" || status === "awaiting_scan"
        ? moved(status, "disconnected", "qr_expired")
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
      return LIVE.includes(status) ? moved(status, "disconnected", event.reason) : unchanged(status)
    case "Logout":
      return moved(status, "disconnected", "logged_out")
    case "Suspend":
      return moved(status, "suspended", "suspended")
    case "Archive":
      return moved(status, "archived", "archived")
  }
}
