/**
 * The in-memory map behind `ApiKeyCache`: verified API key rows by the keyed hash of their secret
 * (never the secret), each for at most `ttlMs`, at most `maxEntries` of them (the oldest stored
 * goes first).
 *
 * The race it guards: a request reads a key's row, the key is revoked and the invalidation
 * arrives, then the request stores what it read. `epoch` counts invalidations; a request takes it
 * before its read and `store` refuses the row when any invalidation happened since, so a row read
 * before an invalidation is never cached after it.
 */
export interface KeyCacheEntry<Row> {
  readonly row: Row
  readonly expiresAt: number
  /** The last minute this process recorded the key's use (`last_used_at`) */
  usedMinute: string | null
}

export interface KeyCache<Row extends { readonly id: string; readonly workspace_id: string }> {
  /** The entry of `hash` while it is fresh */
  readonly get: (hash: string, now: number) => KeyCacheEntry<Row> | undefined
  /** Taken before reading a row from the database */
  readonly epoch: () => number
  /** Stores `row` unless an invalidation happened after `epoch` was taken; whether it did */
  readonly store: (hash: string, row: Row, epoch: number, now: number) => boolean
  readonly dropKey: (id: string) => void
  readonly dropWorkspace: (workspaceId: string) => void
  readonly clear: () => void
  readonly size: () => number
}

export const makeKeyCache = <Row extends { readonly id: string; readonly workspace_id: string }>(options: {
  readonly ttlMs: number
  readonly maxEntries: number
}): KeyCache<Row> => {
  const entries = new Map<string, KeyCacheEntry<Row>>()
  let epoch = 0
  const drop = (matches: (row: Row) => boolean) => {
    epoch++
    for (const [hash, entry] of entries) if (matches(entry.row)) entries.delete(hash)
  }
  return {
    get: (hash, now) => {
      const entry = entries.get(hash)
      if (entry === undefined) return undefined
      if (entry.expiresAt <= now) {
        entries.delete(hash)
        return undefined
      }
      return entry
    },
    epoch: () => epoch,
    store: (hash, row, at, now) => {
      if (at !== epoch || options.ttlMs <= 0) return false
      entries.delete(hash)
      while (entries.size >= options.maxEntries) entries.delete(entries.keys().next().value!)
      entries.set(hash, { row, expiresAt: now + options.ttlMs, usedMinute: null })
      return true
    },
    dropKey: (id) => drop((row) => row.id === id),
    dropWorkspace: (workspaceId) => drop((row) => row.workspace_id === workspaceId),
    clear: () => {
      epoch++
      entries.clear()
    },
    size: () => entries.size
  }
}
