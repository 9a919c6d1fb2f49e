/**
 * Why a sandbox request is refused before anything is held (docs/API.md "Sandbox"): a key that is
 * not a test-mode key, a workspace at its share of the shared numbers (`SandboxShare`), or a pool
 * with every number held (503 with when the first frees up). `Sandbox` asks them in that order.
 */
import type { Security } from "@switchboard/api"
import { Errors, type Plans, SandboxShare, Schemas } from "@switchboard/domain"
import { Effect } from "effect"
import { amount, limitMessage } from "./Entitlements.js"

export const requireTestKey = (principal: Security.Principal) =>
  principal.kind === "api_key" && principal.mode === "test"
    ? Effect.void
    : Effect.fail(
      new Errors.SandboxTestKeyRequired({ message: "Sandbox operations need a test-mode API key (wa_test_...)" })
    )

/**
 * The plan's `shared_test_sessions`, capped at the workspace's share of the pool
 * (`SandboxShare`): 409 `ENTITLEMENT_LIMIT_REACHED` once the workspace holds that many sessions.
 */
export const refuseBeyondShare = (entitlement: Plans.Entitlement, used: number, poolSize: number) => {
  const { by, limit } = SandboxShare.sessionLimit(entitlement, poolSize)
  if (used < limit) return Effect.void
  return Effect.fail(
    new Errors.EntitlementLimitReached({
      message: by === "pool_share"
        ? `One workspace holds at most ${
          amount("shared_test_sessions", limit)
        }, half of the ${poolSize} shared sandbox numbers; end a session with DELETE /v1/sandbox/sessions/{id} before creating another (docs/LIMITS.md "Sandbox numbers")`
        : limitMessage("shared_test_sessions", limit),
      details: {
        entitlement: "shared_test_sessions",
        limit,
        used,
        ...(by === "pool_share" ? { reason: "pool_share", pool_size: poolSize } : {})
      }
    })
  )
}

/**
 * 503 when every number of the pool is held: when the first of them frees up (its session's
 * `expires_at`; sooner if a session is ended), as `details.retry_at` and `Retry-After`.
 */
export const noNumberAvailable = (held: ReadonlyMap<string, string>, pool: ReadonlyArray<string>, nowMs: number) => {
  const ends = pool.flatMap((n) => {
    const at = held.get(n)
    return at === undefined ? [] : [Date.parse(at)]
  })
  const first = Math.max(nowMs, Math.min(...ends))
  const retryAt = Schemas.toTimestamp(first)
  return new Errors.SandboxNoNumberAvailable({
    message:
      `Every shared sandbox number is in use; the first frees up at ${retryAt} (sooner if a session is ended). Retry then, or end one of your sessions with DELETE /v1/sandbox/sessions/{id}`,
    details: {
      retry_at: retryAt,
      retry_after_seconds: Math.max(1, Math.ceil((first - nowMs) / 1000)),
      pool_size: pool.length
    }
  })
}
