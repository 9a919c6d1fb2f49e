/**
 * Linking by pairing code (docs/QR-CHANNELS.md "Linking with a code"): instead of a QR code,
 * WhatsApp's 8-character code that the user types on the phone (WhatsApp, Linked devices, Link a
 * device, "Link with phone number instead").
 *
 * Through Baileys: once the socket is ready to pair (WhatsApp sent its `pair-device` refs and
 * Baileys issued its first QR code, which is not shown), `requestPairingCode(number)` makes the
 * code and sends WhatsApp the companion's key wrapped with it (`companion_hello`). Baileys does
 * not wait for WhatsApp's answer, so this module listens for it: a `link_code_companion_reg`
 * result accepts the number; an IQ error (400 `bad-request`: a number WhatsApp does not link)
 * refuses it, and the connection ends the pairing (`phone_number_refused`). When the user types
 * the code, the phone's notification reaches Baileys, which finishes the handshake on its own
 * (`companion_finish`) and logs in as after a scanned QR code.
 *
 * The code lives as long as the socket's pairing session: WhatsApp's refs, each as long as a QR
 * code (`QR_TIMEOUT`, by default 60 s for the first and 20 s after), about 160 s with WhatsApp's
 * 6 refs. When they run out Baileys closes the socket (408) and the code expires
 * (`pairing_code_expired`); any other close before the link opens also ends it (a new socket would
 * need a new code). One code per pairing session; `qr/start` asks again.
 */
import type { WASocket } from "baileys"
import { Duration, Effect, Option, Redacted } from "effect"
import type { QrCodeSnapshot } from "./QrCodes.js"
import type { QrCodeEvent } from "./QrConnectionEvent.js"

/** WhatsApp refused the number the code was asked for (its answer to `companion_hello`). */
export interface PairingCodeRefused {
  readonly _tag: "PairingCodeRefused"
  readonly generation: number
}

/** The IQ error WhatsApp answers a refused `companion_hello` with, and its result on success. */
const REFUSED = "CB:iq,type:error"
const ACCEPTED = "CB:iq,type:result,link_code_companion_reg"

/**
 * How long the session of a socket that has just issued its first QR code still lasts, `left`
 * more codes to come: Baileys' own timer (60 s, then 20 s per code) unless `qrTimeout` sets each.
 */
export const sessionLength = (qrTimeout: Option.Option<Duration.Duration>, left: number): number =>
  Option.match(qrTimeout, {
    onNone: () => 60_000 + left * 20_000,
    onSome: (each) => Duration.toMillis(each) * (1 + left)
  })

export const make = (options: {
  readonly channelId: string
  readonly annotations: Record<string, string>
  readonly qrTimeout: Option.Option<Duration.Duration>
  /** how a refusal reaches the connection's actor */
  readonly offer: (refused: PairingCodeRefused) => void
}) => {
  /** the number to link (E.164) while a pairing by code is wanted */
  let phoneNumber: string | null = null
  /** a code was asked for in this pairing session */
  let requested = false
  let showing: QrCodeSnapshot | null = null
  const issued: Array<string> = []

  return {
    /** `qr/start` with `{method: "code"}`: the number to link; `null` for QR codes. A new session. */
    want: (number: string | null) => {
      phoneNumber = number
      requested = false
      showing = null
    },
    /** whether this pairing session links by code */
    wanted: () => phoneNumber !== null,
    /** whether this pairing session asked WhatsApp for a code */
    shown: () => requested,
    /** the code showing now, if any */
    showing: () => showing,
    /** the codes issued so far (scrubbed from Baileys' log lines) */
    issued: (): ReadonlyArray<string> => issued,
    /** the pairing session is over (linked, expired, refused, logged out, restarted) */
    end: () => {
      phoneNumber = null
      requested = false
      showing = null
    },
    /**
     * The socket issued a QR code (`left` more to come): the first time in the session, asks
     * WhatsApp for a code for the number and returns it to show; later ones return nothing.
     */
    onQr: (socket: WASocket, generation: number, left: number, now: number) =>
      Effect.gen(function*() {
        const number = phoneNumber
        if (number === null || requested) return undefined
        requested = true
        const ws = socket.ws
        const settle = () => {
          ws.off(REFUSED, refused)
          ws.off(ACCEPTED, settle)
        }
        const refused = () => {
          settle()
          options.offer({ _tag: "PairingCodeRefused", generation })
        }
        ws.on(REFUSED, refused)
        ws.on(ACCEPTED, settle)
        const code = yield* Effect.tryPromise(() => socket.requestPairingCode(number.replace(/^\+/, ""))).pipe(
          Effect.tapError(() => Effect.sync(settle)),
          Effect.option
        )
        if (Option.isNone(code)) {
          // the socket closed meanwhile: its close ends the session
          yield* Effect.logWarning("qr pairing code not requested").pipe(Effect.annotateLogs(options.annotations))
          return undefined
        }
        issued.push(code.value)
        if (issued.length > 10) issued.shift()
        showing = {
          code: Redacted.make(code.value),
          expiresAt: now + sessionLength(options.qrTimeout, left),
          sequence: 1,
          method: "code"
        }
        yield* Effect.logInfo("qr pairing code issued").pipe(Effect.annotateLogs(options.annotations))
        return { _tag: "qr", channelId: options.channelId, ...showing } satisfies QrCodeEvent
      })
  } as const
}
