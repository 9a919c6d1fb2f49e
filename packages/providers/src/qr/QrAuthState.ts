/**
 * A Baileys `AuthenticationState` kept in Postgres through `QrAuthStateRepo` (BAILEYS.md §4):
 * creds persisted on every `creds.update`, every `keys.set` one transaction, everything
 * serialised with Baileys' BufferJSON (a plain `JSON.stringify` would lose the Buffers).
 */
import {
  type AuthenticationCreds,
  type AuthenticationState,
  BufferJSON,
  initAuthCreds,
  proto,
  type SignalDataTypeMap
} from "baileys"
import { Effect, Option, Runtime } from "effect"
import { type QrAuthKeyChange, QrAuthStateRepo } from "./QrAuthStateRepo.js"

const serialize = (value: unknown): string => JSON.stringify(value, BufferJSON.replacer)
const deserialize = (text: string): unknown => JSON.parse(text, BufferJSON.reviver)

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

/** Loads the channel's auth state, or fresh creds when it has none (a new pairing). */
export const load = Effect.fn("QrAuthState.load")(function*(channelId: string) {
  const repo = yield* QrAuthStateRepo
  const runtime = yield* Effect.runtime<never>()
  const run = Runtime.runPromise(runtime)
  const stored = yield* repo.readCreds(channelId)
  const creds: AuthenticationCreds = Option.match(stored, {
    onNone: () => initAuthCreds(),
    onSome: (text) => deserialize(text) as AuthenticationCreds
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
        for (const row of rows) {
          const value = deserialize(row.value)
          out[row.key_id] = (type === "app-state-sync-key"
            ? proto.Message.AppStateSyncKeyData.fromObject(value as object)
            : value) as SignalDataTypeMap[T]
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
