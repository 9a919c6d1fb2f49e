/**
 * How many of the shared sandbox numbers one workspace may hold at once (docs/LIMITS.md
 * "Sandbox numbers"): the plan's `shared_test_sessions`, never more than half of the pool (at
 * least one), so that one workspace cannot hold every number while others wait. `unlimited` on a
 * shared pool therefore means "up to half of the pool". An operator's override with a number is
 * the one exception, honoured as given (a load test that needs the whole pool is a deliberate
 * operator decision, `admin override --value N`).
 */

/** The most sessions a workspace may hold on a pool of `poolSize` numbers, unless an operator says otherwise. */
export const poolShare = (poolSize: number): number => Math.max(1, Math.floor(poolSize / 2))

export interface SessionLimit {
  readonly limit: number
  /** what sets it: the plan, an operator's override, or the pool's share */
  readonly by: "plan" | "override" | "pool_share"
}

/**
 * The limit in force: `value` is the workspace's `shared_test_sessions` (`null`: unlimited) and
 * `source` where it comes from, on a pool of `poolSize` numbers.
 */
export const sessionLimit = (
  entitlement: { readonly value: unknown; readonly source: "plan" | "override" },
  poolSize: number
): SessionLimit => {
  const share = poolShare(poolSize)
  if (typeof entitlement.value !== "number") return { limit: share, by: "pool_share" }
  if (entitlement.source === "override") return { limit: entitlement.value, by: "override" }
  return entitlement.value <= share ? { limit: entitlement.value, by: "plan" } : { limit: share, by: "pool_share" }
}
