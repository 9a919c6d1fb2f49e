/**
 * Verified API keys served from memory (docs/API.md, "API key cache"): authentication reads a
 * key's row once per `API_KEY_CACHE_TTL_SECONDS` per process instead of on every request.
 *
 * Revocation still takes effect at once on every node: whatever can make a cached row wrong
 * (`ApiKeys.revoke`, `Operator.setStatus` of a workspace) calls `invalidateKey` or
 * `invalidateWorkspace`, which drops it here and publishes it to every other process
 * (`Invalidations`, Redis pub/sub). While this process's subscriber is disconnected nothing is
 * served from or stored in the cache (every request reads the row, as without a cache). Without
 * Redis the cache is on only with the embedded database, whose one process hears every change.
 */
import { type ApiKeysRepo, Database } from "@switchboard/db"
import { Invalidations } from "@switchboard/infra"
import { Effect } from "effect"
import { IdentityConfig } from "../IdentityConfig.js"
import { makeKeyCache } from "./KeyCache.js"

const KEY = "api_key:"
const WORKSPACE = "workspace:"

/** The invalidation topic of a workspace whose keys changed (its status), published by the CLI too. */
export const workspaceTopic = (workspaceId: string) => `${WORKSPACE}${workspaceId}`

export class ApiKeyCache extends Effect.Service<ApiKeyCache>()("@switchboard/service-api/ApiKeyCache", {
  effect: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const invalidations = yield* Invalidations.Invalidations
    const cache = makeKeyCache<ApiKeysRepo.ApiKeyAuthRow>({
      ttlMs: config.apiKeyCacheSeconds * 1000,
      maxEntries: config.apiKeyCacheSize
    })
    // without Redis an invalidation reaches this process only: safe with the embedded database
    // (one process owns it), not with api nodes sharing a Postgres, where the cache stays off
    const enabled = config.apiKeyCacheSeconds > 0 && (invalidations.fanOut || (yield* Database.isEmbedded))
    if (enabled) {
      yield* invalidations.listen({
        message: (topic) => {
          if (topic.startsWith(KEY)) cache.dropKey(topic.slice(KEY.length))
          else if (topic.startsWith(WORKSPACE)) cache.dropWorkspace(topic.slice(WORKSPACE.length))
        },
        reset: cache.clear
      })
    }
    const usable = () => enabled && invalidations.live()

    return {
      /** The fresh entry of `hash`, if the cache may serve now */
      get: (hash: string, now: number) => usable() ? cache.get(hash, now) : undefined,
      /** Take before reading the row */
      epoch: cache.epoch,
      /** Stores a row read after `epoch`; nothing when the cache may not serve now */
      store: (hash: string, row: ApiKeysRepo.ApiKeyAuthRow, epoch: number, now: number) =>
        usable() ? cache.store(hash, row, epoch, now) : false,
      invalidateKey: (id: string) => invalidations.publish(`${KEY}${id}`),
      /** Entries held now (tests) */
      size: cache.size
    } as const
  })
}) {}
