/**
 * A Baileys `AuthenticationState` kept in Postgres through `QrAuthStateRepo`:
 * creds persisted on every `creds.update`, every `keys.set` one transaction, everything
 * serialised with Baileys' BufferJSON (a plain `JSON.stringify` would lose the Buffers).
 *
 * Held in memory for the link's life, written through: `load` reads every key of the channel
 * once, `keys.get` answers from memory, `keys.set` changes memory at once and then writes to
 * Postgres, in call order. So decrypting a message never waits on a database round trip, and a
 * database outage does not stop the link (docs/OPERATING.md "Provider input during a database
 * outage"): a write waits for its first attempt only; if that fails, the link goes on from memory
 * while the writes are retried in order (`TransientRetry`) until Postgres takes them. A process
 * killed meanwhile loses the newest key changes; a contact whose session moved on then cannot be
 * decrypted until its phone starts a new one, which it does when asked (a retry receipt).
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
import { DatabaseUnavailable, TransientRetry } from "@switchboard/db"
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
  /** Whether these creds belong to a linked device (`creds.me` set by pairing; a code pairing's number is not one). */
  readonly isPaired: () => boolean
}

/**
 * Whether creds belong to a linked device: `creds.me` set by pairing. A pairing by code sets
 * `creds.me` to the number it asks for (Baileys' `requestPairingCode`) before WhatsApp linked
 * anything; until the phone accepts (`pair-success` stores the signed `account`) it is no link.
 */
const isLinked = (creds: AuthenticationCreds): boolean =>
  creds.me?.id !== undefined && (creds.pairingCode === undefined || creds.account !== undefined)

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
  let creds: AuthenticationCreds = Option.match(readCreds, {
    onNone: () => initAuthCreds(),
    onSome: Either.match({ onLeft: () => initAuthCreds(), onRight: (value) => value as AuthenticationCreds })
  })
  // a pairing by code that never completed (expired, refused, interrupted) names the number it
  // asked for: Baileys would log in as it and be refused. A new pairing starts from fresh creds.
  if (creds.me?.id !== undefined && !isLinked(creds)) {
    yield* Effect.logInfo("qr auth state of an unfinished code pairing dropped").pipe(Effect.annotateLogs(annotations))
    creds = initAuthCreds()
  }
  // every key of the link, by type then id: Baileys' reads are answered from here
  const memory = new Map<string, Map<string, unknown>>()
  const unreadable = new Map<string, { count: number; reason: Unreadable }>()
  for (const row of yield* repo.readAllKeys(channelId)) {
    const read = deserialize(row.value)
    if (Either.isLeft(read)) {
      // missing to Baileys, which then renews what it needs (a session, a pre-key)
      const seen = unreadable.get(row.key_type)
      unreadable.set(row.key_type, { count: (seen?.count ?? 0) + 1, reason: read.left })
      continue
    }
    const value = row.key_type === "app-state-sync-key"
      ? proto.Message.AppStateSyncKeyData.fromObject(read.right as object)
      : read.right
    let byId = memory.get(row.key_type)
    if (byId === undefined) memory.set(row.key_type, byId = new Map())
    byId.set(row.key_id, value)
  }
  for (const [type, { count, reason }] of unreadable) {
    yield* Effect.logError("qr auth keys unreadable (wrong SECRETS_ENCRYPTION_KEY?): treated as missing").pipe(
      Effect.annotateLogs({ ...annotations, key_type: type, count, reason })
    )
  }

  let sealed = false
  /**
   * Writes run one at a time, in call order (each creds write serialises the object as it is
   * then; a wipe waits for the writes before it). A write's promise settles when it is stored or
   * when its first attempt failed: the link goes on from memory while it is retried.
   */
  let writes: Promise<void> = Promise.resolve()
  /** a write is being retried: later ones wait behind it, so their callers do not wait for them */
  let failing = false
  const write = (effect: Effect.Effect<void, TransientRetry.DatabaseUnavailable>): Promise<void> =>
    new Promise<void>((settled) => {
      if (failing) settled()
      let attempts = 0
      const attempt = Effect.suspend(() => (sealed ? Effect.void : effect)).pipe(
        // a transaction whose COMMIT or ROLLBACK lost its connection dies in `@effect/sql`
        Effect.catchAllDefect((defect) => {
          const unavailable = DatabaseUnavailable.classify(defect)
          return unavailable === undefined ? Effect.die(defect) : Effect.fail(unavailable)
        }),
        Effect.tapError((error) =>
          attempts++ > 0 ? Effect.void : Effect.zipRight(
            Effect.sync(() => {
              failing = true
              settled()
            }),
            Effect.logWarning("qr auth state not saved yet; the link goes on from memory").pipe(
              Effect.annotateLogs({ ...annotations, reason: error.reason })
            )
          )
        )
      )
      writes = writes.then(() =>
        run(
          TransientRetry.retryTransient(attempt, { retries: "forever" }).pipe(
            Effect.tap(() =>
              Effect.sync(() => {
                failing = false
              })
            ),
            Effect.catchAllCause((cause) => Effect.logError("qr auth state not saved", cause)),
            Effect.ensuring(Effect.sync(() => settled())),
            Effect.annotateLogs(annotations)
          )
        )
      )
    })

  const state: AuthenticationState = {
    creds,
    keys: {
      get: async <T extends keyof SignalDataTypeMap>(type: T, ids: Array<string>) => {
        const byId = memory.get(type)
        const out: { [id: string]: SignalDataTypeMap[T] } = {}
        if (byId === undefined) return out
        for (const id of ids) {
          const value = byId.get(id)
          if (value !== undefined) out[id] = value as SignalDataTypeMap[T]
        }
        return out
      },
      set: async (data) => {
        if (sealed) return
        const changes: Array<QrAuthKeyChange> = []
        for (const [type, values] of Object.entries(data)) {
          let byId = memory.get(type)
          if (byId === undefined) memory.set(type, byId = new Map())
          for (const [id, value] of Object.entries(values ?? {})) {
            if (value === null || value === undefined) byId.delete(id)
            else byId.set(id, value)
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
      return Effect.zipRight(Effect.promise(() => writes), repo.wipe(channelId))
    }),
    isPaired: () => isLinked(creds)
  } satisfies QrAuthState
})
