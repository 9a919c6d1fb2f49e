/**
 * The keys of secrets at rest: webhook endpoint secrets and the auth state of QR channels are
 * sealed with them (`SecretBox`). Defined once here; the settings that need them (`WebhooksConfig`,
 * `QrConnectionConfig`) read them through `keyring`, so every process that provides them gets the
 * same keys without another layer.
 *
 * - `SECRETS_ENCRYPTION_KEY` (base64 of 32 bytes): the current key; every value is sealed with it.
 * - `SECRETS_ENCRYPTION_KEY_PREVIOUS` (optional, comma-separated, same format): keys of a rotation
 *   in progress. They still open values sealed before the rotation, never seal. Opening tries the
 *   current key first, then each previous one (AES-GCM authentication tells which one fits).
 *   `npm run admin -- reseal-secrets` moves every stored value to the current key; then the
 *   previous keys can go.
 */
import { Config, Effect, Redacted } from "effect"
import * as SecretBox from "./SecretBox.js"
import { DEVELOPMENT_ENCRYPTION_KEY as DEV_KEY } from "./StartupSafety.js"

/** The development default: a known value, so never for production (`StartupSafety` refuses it there). */
export const developmentKey: Redacted.Redacted<Buffer> = Redacted.make(Buffer.from(DEV_KEY, "base64"))

const isKey = (key: Redacted.Redacted<Buffer>) => Redacted.value(key).length === 32

const toKey = (base64: string): Redacted.Redacted<Buffer> => Redacted.make(Buffer.from(base64.trim(), "base64"))

export const encryptionKey: Config.Config<Redacted.Redacted<Buffer>> = Config.redacted("SECRETS_ENCRYPTION_KEY").pipe(
  Config.withDefault(Redacted.make(DEV_KEY)),
  Config.map((r) => toKey(Redacted.value(r))),
  Config.validate({ message: "SECRETS_ENCRYPTION_KEY must be base64 of 32 bytes", validation: isKey }),
  Config.withDescription("AES-256-GCM key of secrets at rest (webhook secrets, QR channel links)")
)

export const previousEncryptionKeys: Config.Config<ReadonlyArray<Redacted.Redacted<Buffer>>> = Config.redacted(
  "SECRETS_ENCRYPTION_KEY_PREVIOUS"
).pipe(
  Config.withDefault(Redacted.make("")),
  Config.map((r) =>
    Redacted.value(r).split(",").filter((part) => part.trim() !== "").map(toKey) as ReadonlyArray<
      Redacted.Redacted<Buffer>
    >
  ),
  Config.validate({
    message: "SECRETS_ENCRYPTION_KEY_PREVIOUS must be comma-separated base64 of 32 bytes each",
    validation: (keys) => keys.every(isKey)
  }),
  Config.withDescription("Earlier keys of secrets at rest: still open values, never seal (a key rotation)")
)

/** How a sealed value opened. */
export interface Opened {
  readonly plaintext: string
  /** `false`: a previous key opened it, so it should be sealed again with the current one */
  readonly current: boolean
}

/**
 * The current key and the previous ones, with the only operations on them. The keys are
 * `Redacted`, so printing a keyring (or a config holding one) never shows them.
 */
export interface Keyring {
  readonly current: Redacted.Redacted<Buffer>
  readonly previous: ReadonlyArray<Redacted.Redacted<Buffer>>
  /** Seals with the current key (never a previous one). */
  readonly seal: (plaintext: string) => string
  /** Opens with the current key, then each previous one; throws when none fits or the format is unknown. */
  readonly open: (sealed: string) => string
  /** Like `open`, and tells whether the current key opened it. */
  readonly openWithKey: (sealed: string) => Opened
}

export const makeKeyring = (
  current: Redacted.Redacted<Buffer>,
  previous: ReadonlyArray<Redacted.Redacted<Buffer>> = []
): Keyring => {
  // the current key listed again as a previous one would only be tried twice
  const others = previous.filter((key) => !Redacted.value(key).equals(Redacted.value(current)))
  const openWithKey = (sealed: string): Opened => {
    try {
      return { plaintext: SecretBox.open(Redacted.value(current), sealed), current: true }
    } catch (error) {
      for (const key of others) {
        try {
          return { plaintext: SecretBox.open(Redacted.value(key), sealed), current: false }
        } catch {
          // not this one
        }
      }
      throw error
    }
  }
  return {
    current,
    previous: others,
    seal: (plaintext) => SecretBox.seal(Redacted.value(current), plaintext),
    open: (sealed) => openWithKey(sealed).plaintext,
    openWithKey
  }
}

/** `SECRETS_ENCRYPTION_KEY` with `SECRETS_ENCRYPTION_KEY_PREVIOUS`. */
export const keyring: Config.Config<Keyring> = Config.all({ current: encryptionKey, previous: previousEncryptionKeys })
  .pipe(Config.map(({ current, previous }) => makeKeyring(current, previous)))

/** The development key alone (defaults of settings objects, tests). */
export const developmentKeyring: Keyring = makeKeyring(developmentKey)

export const isDevelopmentKey = (key: Redacted.Redacted<Buffer>): boolean =>
  Redacted.value(key).equals(Redacted.value(developmentKey))
