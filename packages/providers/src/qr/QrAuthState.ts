/**
 * A Baileys `AuthenticationState` kept in Postgres through `QrAuthStateRepo`:
 * creds persisted on every `creds.update`, every `keys.set` one transaction, everything
 * serialised with Baileys' BufferJSON (a plain `JSON.stringify` would lose the Buffers).
 *
 * Encrypted at rest: every value is sealed with `SecretBox` under `SECRETS_ENCRYPTION_KEY` before
 * it reaches the repository, and opened on read (the link is a full WhatsApp login; no plaintext
 * secret is stored). Values written before that are plaintext BufferJSON: they are still read,
 * and `load` seals them all at once (a key that Baileys never rewrites, like most pre-keys, would
 * otherwise stay plaintext for good). In the same pass, while `SECRETS_ENCRYPTION_KEY_PREVIOUS` is
 * set (a key rotation), `load` seals again under the current key every value that a previous key
 * opens, so a rotation completes itself for each channel as it loads.
 *
 * A value that does not open (another key, a corrupt row) never throws into Baileys: it is logged
 * as an error and treated as missing. For the creds this means no stored link: `resume` reports
 * none and the channel goes `disconnected` with `requiresRepair` (a new QR), without any reconnect
 * loop. Nothing is deleted on the way, so restoring the right key restores the link as long as no
 * new pairing has overwritten it.
 */
import { SecretBox, type SecretsConfig } from "@switchboard/infra"
import {
  type AuthenticationCreds,
  type AuthenticationState,
  BufferJSON,
  initAuthCreds,
  proto,
  type SignalDataTypeMap
} from "baileys"
import { Effect, Either, Option, Runtime } from "effect"
import { type QrAuthKeyChange, QrAuthStateRepo } from "./QrAuthStateRepo.js"

/** Why a stored value could not be read; never the value or a parser message quoting it. */
type Unreadable = "not_decryptable" | "not_json"

const sealer = (keyring: SecretsConfig.Keyring) => ({
  serialize: (value: unknown): string => keyring.seal(JSON.stringify(value, BufferJSON.replacer)),
  deserialize: (stored: string): Either.Either<unknown, Unreadable> => {
    let text = stored
    if (SecretBox.isSealed(stored)) {
      try {
        text = keyring.open(stored)
      } catch {
        return Either.left("not_decryptable")
      }
    }
    try {
      return Either.right(JSON.parse(text, BufferJSON.reviver))
    } catch {
      return Either.left("not_json")
    }
  }
})

export interface QrAuthState {
  /** What `makeWASocket({ auth })` takes. The creds object is mutated by Baileys. */
  readonly state: AuthenticationState
  /** Persists the current creds; wire it to `creds.update`. Writes are serialised. */
  readonly saveCreds: () => Promise<void>
  /**
   * Stops every later write. Called before a wipe so a dying socket's late `creds.update` or
   * `keys.set` cannot bring a removed link back.
   */
  readonly seal: () => void
  /** Seals, waits for the writes in flight, then deletes the channel's whole auth state. */
  readonly forget: Effect.Effect<void>
  /** Whether these creds belong to a linked device (`creds.me` set by pairing). */
  readonly isPaired: () => boolean
}

/**
 * Loads the channel's auth state, or fresh creds when it has none (a new pairing) or when its
 * stored creds cannot be read with any key of `keyring`.
 */
export const load = Effect.fn("QrAuthState.load")(function*(
  channelId: string,
  keyring: SecretsConfig.Keyring
) {
  const repo = yield* QrAuthStateRepo
  const runtime = yield* Effect.runtime<never>()
  const run = Runtime.runPromise(runtime)
  const { deserialize, serialize } = sealer(keyring)
  const annotations = { channel_id: channelId }
  // plaintext rows are sealed; with previous keys configured, rows one of them opens are sealed
  // again under the current key (a value no key opens is left as it is)
  const resealed = yield* repo.reseal(
    channelId,
    keyring.previous.length > 0 ? "all" : "plaintext",
    (value) => {
      if (!SecretBox.isSealed(value)) return keyring.seal(value)
      try {
        const opened = keyring.openWithKey(value)
        return opened.current ? undefined : keyring.seal(opened.plaintext)
      } catch {
        return undefined
      }
    }
  )
  if (resealed > 0) {
    yield* Effect.logInfo("qr auth state sealed under the current SECRETS_ENCRYPTION_KEY").pipe(
      Effect.annotateLogs({ ...annotations, rows: resealed })
    )
  }
  const stored = yield* repo.readCreds(channelId)
  const readCreds = Option.map(stored, deserialize)
  if (Option.isSome(readCreds) && Either.isLeft(readCreds.value)) {
    yield* Effect.logError(
      "qr auth state unreadable (wrong SECRETS_ENCRYPTION_KEY?): the stored link is treated as missing; the channel needs a new QR"
    ).pipe(Effect.annotateLogs({ ...annotations, reason: readCreds.value.left }))
  }
  const creds: AuthenticationCreds = Option.match(readCreds, {
    onNone: () => initAuthCreds(),
    onSome: Either.match({ onLeft: () => initAuthCreds(), onRight: (value) => value as AuthenticationCreds })
  })
  let sealed = false
  // one write at a time, in call order: each creds write serialises the object as it is then,
  // and a wipe cannot overtake a write already in flight
  const writeLock = yield* Effect.makeSemaphore(1)
  const write = (effect: Effect.Effect<void>) =>
    run(writeLock.withPermits(1)(Effect.suspend(() => (sealed ? Effect.void : effect))))

  const state: AuthenticationState = {
    creds,
    keys: {
      get: async <T extends keyof SignalDataTypeMap>(type: T, ids: Array<string>) => {
        const rows = await run(repo.readKeys(channelId, type, ids))
        const out: { [id: string]: SignalDataTypeMap[T] } = {}
        const unreadable: Array<Unreadable> = []
        for (const row of rows) {
          const read = deserialize(row.value)
          if (Either.isLeft(read)) {
            unreadable.push(read.left)
            continue
          }
          const value = read.right
          out[row.key_id] = (type === "app-state-sync-key"
            ? proto.Message.AppStateSyncKeyData.fromObject(value as object)
            : value) as SignalDataTypeMap[T]
        }
        if (unreadable.length > 0) {
          // missing to Baileys, which then renews what it needs (a session, a pre-key)
          await run(
            Effect.logError("qr auth keys unreadable (wrong SECRETS_ENCRYPTION_KEY?): treated as missing").pipe(
              Effect.annotateLogs({ ...annotations, key_type: type, count: unreadable.length, reason: unreadable[0]! })
            )
          )
        }
        return out
      },
      set: async (data) => {
        if (sealed) return
        const changes: Array<QrAuthKeyChange> = []
        for (const [type, byId] of Object.entries(data)) {
          for (const [id, value] of Object.entries(byId ?? {})) {
            changes.push({ type, id, value: value === null || value === undefined ? null : serialize(value) })
          }
        }
        if (changes.length > 0) await write(repo.writeKeys(channelId, changes))
      }
    }
  }

  return {
    state,
    saveCreds: () => (sealed ? Promise.resolve() : write(Effect.suspend(() =>
      repo.writeCreds(channelId, serialize(creds))
    ))),
    seal: () => {
      sealed = true
    },
    forget: Effect.suspend(() => {
      sealed = true
      return writeLock.withPermits(1)(repo.wipe(channelId))
    }),
    isPaired: () => creds.me?.id !== undefined
  } satisfies QrAuthState
})
