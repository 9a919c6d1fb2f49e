/**
 * The close-code policy: what a QR connection does when its socket closes, as a pure function of
 * the close and the connection's budgets. `QrConnection` performs the answer.
 *
 * | close | what happens |
 * |---|---|
 * | 515 restart required | reconnect at once with the same creds (after pairing) |
 * | 401 logged out | terminal: auth state sealed and wiped; from the phone -> `requiresRepair` |
 * | 440 replaced | terminal (another socket owns the link); no reconnect, creds kept |
 * | 403, 411 forbidden; 405 outdated client | terminal |
 * | 408 before pairing, codes shown | every QR code expired: `expired`, then `disconnected`; wait for `start` |
 * | 408 after pairing (or before any code), 428, 500, 503, others | reconnect with exponential backoff and jitter; after the budget, `disconnected` |
 * | closed before the WebSocket opened (DNS, refused, timeout, TLS, HTTP error) | a connection error: reported (`connection_error`), then as the row above, but after `qr/start` and until a link first opens only `connectMaxFailures` attempts in a row |
 *
 * The budget counts reconnects (515 included) since the last `open`, so nothing loops. A close
 * before the WebSocket opened never reached WhatsApp, so its Baileys code (408 for a DNS failure,
 * an HTTP status from a proxy) says nothing about the link: it is classified (`QrConnectFailure`)
 * instead, and someone waiting on `qr/start` learns in seconds why, not after the whole budget.
 */
import { Backoff } from "@switchboard/domain"
import { DisconnectReason } from "baileys"

/** 515: the restart WhatsApp asks for after pairing (the new creds log in). */
export const RESTART_REQUIRED: number = DisconnectReason.restartRequired

/** Why a close ends the link for good (the channel's status reason). */
export type TerminalReason = "connection_replaced" | "forbidden" | "client_outdated"

const TERMINAL: ReadonlyMap<number, TerminalReason> = new Map([
  [DisconnectReason.connectionReplaced, "connection_replaced"],
  [DisconnectReason.forbidden, "forbidden"],
  [DisconnectReason.multideviceMismatch, "forbidden"],
  [405, "client_outdated"]
])

/** A socket's close, and where the connection stood when it came. */
export interface Close {
  /** Baileys' close code; `undefined` when the close carried none */
  readonly code: number | undefined
  /** the socket closed before its WebSocket opened: WhatsApp was never reached */
  readonly unreached: boolean
  /** the link is paired (WhatsApp registered this device) */
  readonly paired: boolean
  /** this pairing session showed at least one QR code */
  readonly codesShown: boolean
  /** reconnects since the last `open` (515 included) */
  readonly attempts: number
  /** attempts in a row that could not reach WhatsApp, this one included */
  readonly connectFailures: number
  /** `qr/start` asked and no link opened since */
  readonly interactive: boolean
}

/** The budgets (`QrConnectionConfig`). */
export interface Budget {
  readonly reconnectMaxAttempts: number
  readonly connectMaxFailures: number
}

/** What the connection does next. */
export type CloseAction =
  /** 515: open a new socket at once with the same creds */
  | { readonly _tag: "Restart" }
  /** 401: the link is gone; forget it */
  | { readonly _tag: "LoggedOut" }
  /** the link is kept but never reconnected */
  | { readonly _tag: "Terminated"; readonly reason: TerminalReason }
  /** every QR code of the pairing session expired: wait for `qr/start` */
  | { readonly _tag: "CodesExpired" }
  /** reconnect after a delay (`reconnectDelay`) */
  | { readonly _tag: "Reconnect" }
  /** the budget is spent: `disconnected` */
  | { readonly _tag: "GiveUp" }

const restart: CloseAction = { _tag: "Restart" }
const loggedOut: CloseAction = { _tag: "LoggedOut" }
const codesExpired: CloseAction = { _tag: "CodesExpired" }
const reconnect: CloseAction = { _tag: "Reconnect" }
const giveUp: CloseAction = { _tag: "GiveUp" }

/** What a close means (the table above). */
export const onClose = (close: Close, budget: Budget): CloseAction => {
  const spent = close.attempts >= budget.reconnectMaxAttempts
  // never reached WhatsApp: the code is Baileys' guess (408 for DNS, a proxy's HTTP status), not WhatsApp's word
  if (close.unreached) {
    return spent || (close.interactive && close.connectFailures >= budget.connectMaxFailures) ? giveUp : reconnect
  }
  if (close.code === DisconnectReason.restartRequired) return spent ? giveUp : restart
  if (close.code === DisconnectReason.loggedOut) return loggedOut
  const terminal = close.code === undefined ? undefined : TERMINAL.get(close.code)
  if (terminal) return { _tag: "Terminated", reason: terminal }
  // every QR code expired: the user asks again (qr/start); never loop new pairing sessions
  if (close.code === DisconnectReason.timedOut && !close.paired && close.codesShown) return codesExpired
  return spent ? giveUp : reconnect
}

/**
 * The delay before reconnect number `attempts + 1`: exponential from `baseMs`, capped at `maxMs`,
 * with equal jitter (`Backoff.equalJitter`: between half and all of it; `random` in [0, 1)).
 */
export const reconnectDelay = (
  attempts: number,
  delays: { readonly baseMs: number; readonly maxMs: number },
  random: number
): number => {
  return Math.round(Backoff.equalJitter(Math.min(delays.maxMs, delays.baseMs * 2 ** attempts), random))
}
