/**
 * Plan entitlements with per-workspace overrides. Every feature that
 * creates a limited resource calls `check` with its current count.
 */
import { WorkspacesRepo } from "@switchboard/db"
import { Errors, Plans } from "@switchboard/domain"
import { Effect, Option } from "effect"

/**
 * The limit of an entitlement a use-case counts against, when there is one to enforce: `undefined`
 * for entitlements not enforced yet and for unlimited (or non-numeric) values.
 */
export const enforcedLimit = (name: Plans.EntitlementName, entitlement: Plans.Entitlement): number | undefined =>
  Plans.ENTITLEMENTS[name].enforced && typeof entitlement.value === "number" ? entitlement.value : undefined

/**
 * `Entitlements.check` on an entitlement already resolved (the send path reads the plan and its
 * overrides with its checks): refuses when `used + adding` exceeds the enforced limit.
 */
export const refuseBeyond = (
  name: Plans.EntitlementName,
  entitlement: Plans.Entitlement,
  used: number,
  adding = 1
): Effect.Effect<void, Errors.EntitlementLimitReached> => {
  const limit = enforcedLimit(name, entitlement)
  return limit === undefined || used + adding <= limit
    ? Effect.void
    : Effect.fail(
      new Errors.EntitlementLimitReached({
        message: `The plan allows ${limit} ${name.replace(/_/g, " ")}`,
        details: { entitlement: name, limit, used }
      })
    )
}

export class Entitlements extends Effect.Service<Entitlements>()("@switchboard/service-api/Entitlements", {
  effect: Effect.gen(function*() {
    const workspaces = yield* WorkspacesRepo.WorkspacesRepo

    const forWorkspace = Effect.fn("Entitlements.forWorkspace")(function*(workspaceId: string) {
      const workspace = yield* Effect.flatMap(
        workspaces.findById(workspaceId),
        Option.match({
          onNone: () => Effect.dieMessage(`workspace ${workspaceId} vanished`),
          onSome: Effect.succeed
        })
      )
      const overrides = yield* workspaces.overrides(workspaceId)
      return { plan: workspace.plan, entitlements: Plans.resolveEntitlements(workspace.plan, overrides) }
    })

    /** The effective value of one entitlement. */
    const get = Effect.fn("Entitlements.get")(function*(workspaceId: string, name: Plans.EntitlementName) {
      const { entitlements } = yield* forWorkspace(workspaceId)
      return entitlements[name] as Plans.Entitlement
    })

    /**
     * Refuses one more of a limited resource when `used` (the current count, before adding
     * `adding` more) would exceed the limit. Entitlements not enforced yet never refuse.
     */
    const check = Effect.fn("Entitlements.check")(
      function*(workspaceId: string, name: Plans.EntitlementName, used: number, adding = 1) {
        if (!Plans.ENTITLEMENTS[name].enforced) return
        yield* refuseBeyond(name, yield* get(workspaceId, name), used, adding)
      }
    )

    return { forWorkspace, get, check } as const
  }),
  dependencies: [WorkspacesRepo.WorkspacesRepo.Default]
}) {}
