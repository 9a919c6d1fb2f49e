/** API keys: create (secret shown once), list, revoke, and authenticate a presented secret. */
import type { Security } from "@switchboard/api"
import { ApiKeysRepo } from "@switchboard/db"
import { Errors, Identity, Ids, Pagination, Schemas, Scopes } from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"
import { ApiKeyCache } from "./ApiKeyCache.js"
import { API_KEY, Credentials } from "./Credentials.js"
import { Entitlements } from "./Entitlements.js"

export class ApiKeys extends Effect.Service<ApiKeys>()("@switchboard/service-api/ApiKeys", {
  effect: Effect.gen(function*() {
    const repo = yield* ApiKeysRepo.ApiKeysRepo
    const credentials = yield* Credentials
    const entitlements = yield* Entitlements
    const cache = yield* ApiKeyCache

    const create = Effect.fn("ApiKeys.create")(function*(input: {
      readonly workspaceId: `ws_${string}`
      readonly createdBy: string | null
      readonly name: string
      readonly mode: Identity.KeyMode
      readonly scopes?: ReadonlyArray<Scopes.Scope> | undefined
      readonly expires_at?: string | null | undefined
    }) {
      const now = yield* Clock.currentTimeMillis
      let expiresAt: string | null = null
      if (input.expires_at !== undefined && input.expires_at !== null) {
        const at = Date.parse(input.expires_at)
        if (at <= now) {
          return yield* new Errors.ValidationError({
            message: "Request validation failed",
            details: { issues: [{ path: ["expires_at"], message: "Expected a time in the future" }] }
          })
        }
        expiresAt = Schemas.toTimestamp(at)
      }
      yield* entitlements.check(
        input.workspaceId,
        "api_keys",
        yield* repo.countActive(input.workspaceId, Schemas.toTimestamp(now))
      )
      const scopes = input.scopes === undefined || input.scopes.length === 0
        ? Scopes.DEFAULT_SCOPES
        : Array.from(new Set(input.scopes))
      const secret = credentials.newApiKeySecret(input.mode)
      const row: ApiKeysRepo.ApiKeyRow = {
        id: yield* Ids.newId("key"),
        workspace_id: input.workspaceId,
        name: input.name,
        mode: input.mode,
        last4: secret.slice(-4),
        scopes,
        expires_at: expiresAt,
        created_at: Schemas.toTimestamp(now),
        last_used_at: null,
        revoked_at: null
      }
      const key = yield* repo.insert({
        ...row,
        secret_hash: credentials.apiKeyHash(secret),
        created_by: input.createdBy
      })
      return new Identity.CreatedApiKey({ ...key, secret })
    })

    const list = Effect.fn("ApiKeys.list")(
      function*(
        workspaceId: string,
        query: { readonly limit?: number | undefined; readonly after?: Pagination.CursorPosition | undefined }
      ) {
        const limit = query.limit ?? Pagination.DEFAULT_LIMIT
        const rows = yield* repo.list(workspaceId, limit, query.after)
        return Pagination.toPage(rows, limit, (key) => key)
      }
    )

    /**
     * Least privilege (docs/API.md "API keys", OpenAPI description): a signed-in user revokes any key
     * of the workspace; an API key revokes only keys of its own mode whose scopes it holds all
     * of (itself included), so a narrow or test-mode key cannot switch off a broader or live one.
     */
    const revoke = Effect.fn("ApiKeys.revoke")(function*(principal: Security.Principal, id: string) {
      const notFound = new Errors.ApiKeyNotFound({
        message: `No API key ${id} in this workspace`,
        details: { resource: "api_key", id }
      })
      if (principal.kind === "api_key") {
        const target = yield* repo.find(principal.workspaceId, id)
        if (Option.isNone(target)) return yield* notFound
        const missing = target.value.scopes.filter((scope) => !principal.scopes.includes(scope))
        if (target.value.mode !== principal.mode || missing.length > 0) {
          return yield* new Errors.Forbidden({
            message: target.value.mode !== principal.mode
              ? "An API key can only revoke keys of its own mode"
              : "An API key can only revoke keys whose scopes it holds",
            details: {
              reason: target.value.mode !== principal.mode ? "key_mode_mismatch" : "key_scopes_exceed_own",
              missing_scopes: missing
            }
          })
        }
      }
      const row = yield* repo.revoke(principal.workspaceId, id, Schemas.toTimestamp(yield* Clock.currentTimeMillis))
      if (Option.isNone(row)) return yield* notFound
      // before answering: the next request with this key, on any node, is refused
      yield* cache.invalidateKey(row.value.id)
      return { id: row.value.id, revoked_at: row.value.revoked_at! }
    })

    /**
     * The key a secret belongs to when it is usable: well-formed, known, not revoked, not
     * expired, workspace active. Anything else is `None` (callers answer one indistinct 401).
     * The row comes from `ApiKeyCache` when it holds it (no statement); expiry is checked on
     * every request. Use is recorded once a minute per key and process (`last_used_at`).
     */
    const authenticate = Effect.fn("ApiKeys.authenticate")(function*(secret: string) {
      if (!API_KEY.test(secret)) return Option.none<ApiKeysRepo.ApiKeyRow>()
      const hash = credentials.apiKeyHash(secret)
      const now = yield* Clock.currentTimeMillis
      let entry = cache.get(hash, now)
      if (entry === undefined) {
        const epoch = cache.epoch()
        const found = yield* repo.findBySecretHash(hash)
        if (Option.isNone(found)) return Option.none<ApiKeysRepo.ApiKeyRow>()
        if (!credentials.sameHash(found.value.secret_hash, hash)) return Option.none<ApiKeysRepo.ApiKeyRow>()
        cache.store(hash, found.value, epoch, now)
        entry = { row: found.value, expiresAt: now, usedMinute: null }
      }
      const key = entry.row
      if (
        key.revoked_at !== null ||
        (key.expires_at !== null && Date.parse(key.expires_at) <= now) ||
        key.workspace_status !== "active"
      ) return Option.none<ApiKeysRepo.ApiKeyRow>()
      const minute = Schemas.toTimestamp(Math.floor(now / 60_000) * 60_000)
      if ((entry.usedMinute ?? key.last_used_at ?? "") < minute) {
        yield* repo.touch(key.id, minute)
        // the stored entry, when this one is it (a copy otherwise: nothing else sees it)
        const stored = cache.get(hash, now)
        if (stored?.row === key) stored.usedMinute = minute
      }
      return Option.some<ApiKeysRepo.ApiKeyRow>(key)
    })

    return { create, list, revoke, authenticate } as const
  }),
  dependencies: [ApiKeysRepo.ApiKeysRepo.Default, Credentials.Default, Entitlements.Default, ApiKeyCache.Default]
}) {}
