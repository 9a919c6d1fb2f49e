/**
 * The QR codes of a pairing session: their sequence and lifetimes, the one showing now, and the
 * strings issued so far (scrubbed from Baileys' log lines).
 */
import { Duration, Option, Redacted } from "effect"

/** The current QR code (or pairing code: `method: "code"`, `QrPairingCode`), if one is showing. */
export interface QrCodeSnapshot {
  readonly code: Redacted.Redacted<string>
  readonly expiresAt: number
  readonly sequence: number
  readonly method?: "code"
}

/** `qrTimeout`: each code's lifetime; by default Baileys' own (60 s for the first, 20 s after). */
export const make = (qrTimeout: Option.Option<Duration.Duration>) => {
  let showing: QrCodeSnapshot | null = null
  let sequence = 0
  const issued: Array<string> = []
  return {
    showing: () => showing,
    /** whether this pairing session showed a code */
    shown: () => sequence > 0,
    issued: (): ReadonlyArray<string> => issued,
    /** no code shows (paired, ended, expired) */
    clear: () => {
      showing = null
    },
    /** a new pairing session: numbered from 1 again */
    restart: () => {
      showing = null
      sequence = 0
    },
    /** Baileys issued `code` at `now`: it shows until its lifetime ends. */
    issue: (code: string, now: number): QrCodeSnapshot => {
      sequence++
      issued.push(code)
      if (issued.length > 50) issued.shift()
      const lifetime = Option.match(qrTimeout, {
        onNone: () => (sequence === 1 ? 60_000 : 20_000),
        onSome: Duration.toMillis
      })
      showing = { code: Redacted.make(code), expiresAt: now + lifetime, sequence }
      return showing
    }
  } as const
}
