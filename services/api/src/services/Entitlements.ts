/**
 * Plan entitlements with per-workspace overrides. Every feature that
 * creates a limited resource calls `check` with its current count.
 */
import { WorkspacesRepo } from "@switchboard/db"
import { EntitlementLimitReached, ENTITLEMENTS, resolveEntitlements } from "@switchboard/domain"
import type { Entitlement, EntitlementName } from "@switchboard/domain"
import { Effect, Option } from "effect"

export class Entitlements extends Effect.Service<Entitlements>()("@switchboard/service-api/Entitlements", {
  effect: Effect.gen(function*() {
    const workspaces = yield* WorkspacesRepo

    const forWorkspace = Effect.fn("Entitlements.forWorkspace")(function*(workspaceId: string) {
      const workspace = yield* Effect.flatMap(
        workspaces.findById(workspaceId),
        Option.match({
          onNone: () => Effect.dieMessage(`workspace ${workspaceId} vanished`),
          onSome: Effect.succeed
        })
      )
      const overrides = yield* workspaces.overrides(workspaceId)
      return { plan: workspace.plan, entitlements: resolveEntitlements(workspace.plan, overrides) }
    })

    /** The effective value of one entitlement. */
    const get = Effect.fn("Entitlements.get")(function*(workspaceId: string, name: EntitlementName) {
      const { entitlements } = yield* forWorkspace(workspaceId)
      return entitlements[name] as Entitlement
    })

    /**
     * Refuses one more of a limited resource when `used` (the current count, before adding
     * `adding` more) would exceed the limit. Entitlements not enforced yet never refuse.
     */
    const check = Effect.fn("Entitlements.check")(
      function*(workspaceId: string, name: EntitlementName, used: number, adding = 1) {
        if (!ENTITLEMENTS[name].enforced) return
        const entitlement = yield* get(workspaceId, name)
        if (typeof entitlement.value !== "number") return
        if (used + adding > entitlement.value) {
          return yield* new EntitlementLimitReached({
            message: `The plan allows ${entitlement.value} ${name.replace(/_/g, " ")}`,
            details: { entitlement: name, limit: entitlement.value, used }
          })
        }
      }
    )

    return { forWorkspace, get, check } as const
  }),
  dependencies: [WorkspacesRepo.Default]
}) {}
