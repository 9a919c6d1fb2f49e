/**
 * The API key cache (docs/API.md): a verified key is served from memory without reading its
 * row, revocation drops it at once, and a row read before an invalidation is never cached after
 * it. The repository is a counting stand-in here, so "no statement" is measured, not assumed;
 * root test/keyCacheNodes.e2e.test.ts proves the same across api processes on Postgres and Redis.
 */
import { assert, describe, it } from "@effect/vitest"
import { ApiKeysRepo, DatabaseConfig } from "@switchboard/db"
import { Identity } from "@switchboard/domain"
import { Invalidations, Redis } from "@switchboard/infra"
import { Effect, Layer, Option, Redacted } from "effect"
import * as IdentityConfig from "../src/IdentityConfig.js"
import { ApiKeyCache } from "../src/services/ApiKeyCache.js"
import { ApiKeys } from "../src/services/ApiKeys.js"
import { Credentials } from "../src/services/Credentials.js"
import { Entitlements } from "../src/services/Entitlements.js"
import { makeKeyCache } from "../src/services/KeyCache.js"

const SECRET = `wa_live_${"a".repeat(40)}`
const now = () => new Date().toISOString()

/** One key, in memory; counts the reads authentication makes. */
const fakeRepo = (
  state: { reads: number; row: ApiKeysRepo.ApiKeyAuthRow | undefined; beforeRead?: (() => void) | undefined }
) =>
  Layer.succeed(
    ApiKeysRepo.ApiKeysRepo,
    ApiKeysRepo.ApiKeysRepo.make({
      insert: () => Effect.die("unused"),
      find: () => Effect.die("unused"),
      list: () => Effect.die("unused"),
      countActive: () => Effect.die("unused"),
      touch: () => Effect.void,
      findBySecretHash: () =>
        Effect.sync(() => {
          state.reads++
          const row = state.row
          state.beforeRead?.()
          return Option.fromNullable(row)
        }),
      revoke: (_workspaceId, id, at) =>
        Effect.sync(() => {
          state.row = { ...state.row!, revoked_at: at }
          const { secret_hash: _, workspace_id: __, workspace_status: ___, ...key } = state.row
          // the repo answers the domain's key; this stand-in's ids are not real ones (no validation)
          return Option.some(
            new Identity.ApiKey({ ...key, id: id as Identity.ApiKey["id"], object: "api_key", prefix: "wa_live" }, true)
          )
        })
    })
  )

const services = (state: Parameters<typeof fakeRepo>[0], cacheSeconds = 600, databaseUrl?: string) =>
  ApiKeys.DefaultWithoutDependencies.pipe(
    Layer.provideMerge(ApiKeyCache.Default),
    Layer.provide(fakeRepo(state)),
    Layer.provideMerge(Credentials.Default),
    Layer.provide(Layer.succeed(
      Entitlements,
      Entitlements.make({
        forWorkspace: () => Effect.die("unused"),
        get: () => Effect.die("unused"),
        check: () => Effect.succeed(undefined)
      })
    )),
    // no REDIS_URL: the embedded mode's in-process invalidations
    Layer.provideMerge(
      Invalidations.layer.pipe(
        Layer.provide(Redis.clientLayer),
        Layer.provide(Redis.configLayer({ url: Option.none() }))
      )
    ),
    Layer.provideMerge(IdentityConfig.layer({ apiKeyCacheSeconds: cacheSeconds })),
    // the embedded database: this is the only process
    Layer.provide(DatabaseConfig.layer({ url: Option.map(Option.fromNullable(databaseUrl), Redacted.make) }))
  )

const rowFor = (hash: string): ApiKeysRepo.ApiKeyAuthRow => ({
  id: "key_01",
  workspace_id: "ws_01",
  name: "k",
  mode: "live",
  last4: "aaaa",
  scopes: ["messages.send"],
  expires_at: null,
  created_at: now(),
  last_used_at: now(),
  revoked_at: null,
  secret_hash: hash,
  workspace_status: "active"
})

const withKey = (state: Parameters<typeof fakeRepo>[0]) =>
  Effect.gen(function*() {
    const credentials = yield* Credentials
    state.row = rowFor(credentials.apiKeyHash(SECRET))
  })

describe("API key cache", () => {
  it.effect("serves a verified key again without reading its row", () => {
    const state = { reads: 0, row: undefined as ApiKeysRepo.ApiKeyAuthRow | undefined }
    return Effect.gen(function*() {
      yield* withKey(state)
      const keys = yield* ApiKeys
      for (let i = 0; i < 5; i++) assert.isTrue(Option.isSome(yield* keys.authenticate(SECRET)))
      assert.strictEqual(state.reads, 1)
    }).pipe(Effect.provide(services(state)))
  })

  it.effect("reads the row on every request when the cache is off (TTL 0)", () => {
    const state = { reads: 0, row: undefined as ApiKeysRepo.ApiKeyAuthRow | undefined }
    return Effect.gen(function*() {
      yield* withKey(state)
      const keys = yield* ApiKeys
      for (let i = 0; i < 3; i++) yield* keys.authenticate(SECRET)
      assert.strictEqual(state.reads, 3)
    }).pipe(Effect.provide(services(state, 0)))
  })

  it.effect("stays off without Redis when api nodes share a Postgres (nothing would reach the others)", () => {
    const state = { reads: 0, row: undefined as ApiKeysRepo.ApiKeyAuthRow | undefined }
    return Effect.gen(function*() {
      yield* withKey(state)
      const keys = yield* ApiKeys
      for (let i = 0; i < 3; i++) yield* keys.authenticate(SECRET)
      assert.strictEqual(state.reads, 3)
    }).pipe(Effect.provide(services(state, 600, "postgres://nowhere.invalid/db")))
  })

  it.effect("refuses a cached key on the request right after its revocation", () => {
    const state = { reads: 0, row: undefined as ApiKeysRepo.ApiKeyAuthRow | undefined }
    return Effect.gen(function*() {
      yield* withKey(state)
      const keys = yield* ApiKeys
      const key = yield* keys.authenticate(SECRET)
      assert.isTrue(Option.isSome(key))
      yield* keys.revoke({
        kind: "user",
        workspaceId: "ws_01",
        scopes: [],
        apiKeyId: null,
        mode: null,
        userId: "usr_01",
        sessionId: "ses_01"
      }, "key_01")
      assert.isTrue(Option.isNone(yield* keys.authenticate(SECRET)))
      assert.strictEqual(state.reads, 2)
    }).pipe(Effect.provide(services(state)))
  })

  it.effect("does not cache a row read before an invalidation that arrived during the read", () => {
    const state: Parameters<typeof fakeRepo>[0] = { reads: 0, row: undefined }
    return Effect.gen(function*() {
      yield* withKey(state)
      const keys = yield* ApiKeys
      const invalidations = yield* Invalidations.Invalidations
      // the row is read (still active), then the key is revoked and announced before it is stored
      state.beforeRead = () => {
        state.beforeRead = undefined
        state.row = { ...state.row!, revoked_at: now() }
        Effect.runSync(invalidations.publish("api_key:key_01"))
      }
      yield* keys.authenticate(SECRET)
      assert.isTrue(Option.isNone(yield* keys.authenticate(SECRET)), "the stale row was not cached")
      assert.strictEqual(state.reads, 2)
    }).pipe(Effect.provide(services(state)))
  })
})

describe("KeyCache", () => {
  const row = (id: string, workspace_id = "ws_1") => ({ id, workspace_id })

  it("forgets an entry at its TTL", () => {
    const cache = makeKeyCache<ReturnType<typeof row>>({ ttlMs: 5_000, maxEntries: 10 })
    assert.isTrue(cache.store("h", row("k"), cache.epoch(), 1_000))
    assert.isDefined(cache.get("h", 5_999))
    assert.isUndefined(cache.get("h", 6_000))
  })

  it("drops the oldest entry beyond its size", () => {
    const cache = makeKeyCache<ReturnType<typeof row>>({ ttlMs: 5_000, maxEntries: 2 })
    for (const h of ["a", "b", "c"]) cache.store(h, row(h), cache.epoch(), 0)
    assert.strictEqual(cache.size(), 2)
    assert.isUndefined(cache.get("a", 1))
    assert.isDefined(cache.get("c", 1))
  })

  it("drops a key's entries, or a workspace's, and refuses rows read before the drop", () => {
    const cache = makeKeyCache<ReturnType<typeof row>>({ ttlMs: 5_000, maxEntries: 10 })
    cache.store("a", row("ka", "ws_1"), cache.epoch(), 0)
    cache.store("b", row("kb", "ws_2"), cache.epoch(), 0)
    const before = cache.epoch()
    cache.dropKey("ka")
    assert.isUndefined(cache.get("a", 1))
    assert.isDefined(cache.get("b", 1))
    assert.isFalse(cache.store("a", row("ka"), before, 1))
    cache.dropWorkspace("ws_2")
    assert.isUndefined(cache.get("b", 1))
  })
})
