/** What operators do through the CLI (DECISIONS 2, 12): bootstrap users, plans, overrides, suspension. */
import { UsersRepo, WorkspacesRepo } from "@switchboard/db"
import { ENTITLEMENTS, toTimestamp } from "@switchboard/domain"
import type { EntitlementName, EntitlementValue, PlanName } from "@switchboard/domain"
import { Clock, Data, Effect } from "effect"
import { Accounts } from "./Accounts.js"

export class OperatorError extends Data.TaggedError("OperatorError")<{ readonly message: string }> {}

export class Operator extends Effect.Service<Operator>()("@switchboard/service-api/Operator", {
  effect: Effect.gen(function*() {
    const accounts = yield* Accounts
    const users = yield* UsersRepo
    const workspaces = yield* WorkspacesRepo
    const now = Effect.map(Clock.currentTimeMillis, toTimestamp)

    const createUser = Effect.fn("Operator.createUser")(function*(input: {
      readonly email: string
      readonly password: string
      readonly name: string
      readonly workspace: string
      readonly plan: PlanName
      readonly verified: boolean
    }) {
      const created = yield* accounts.createUser({ ...input, workspaceName: input.workspace }).pipe(
        Effect.mapError((e) => new OperatorError({ message: e.message }))
      )
      return { user_id: created.user.id, workspace_id: created.workspace.id }
    })

    const setPlan = Effect.fn("Operator.setPlan")(function*(workspaceId: string, plan: PlanName) {
      if (!(yield* workspaces.setPlan(workspaceId, plan, yield* now))) {
        return yield* new OperatorError({ message: `No workspace ${workspaceId}` })
      }
      return { workspace_id: workspaceId, plan }
    })

    /** Sets (or with `value = undefined`, clears) an override; `unlimited` sets null. */
    const override = Effect.fn("Operator.override")(
      function*(workspaceId: string, entitlement: string, value: EntitlementValue | undefined) {
        if (!(entitlement in ENTITLEMENTS)) {
          return yield* new OperatorError({ message: `Unknown entitlement ${entitlement}` })
        }
        if ((yield* workspaces.findById(workspaceId))._tag === "None") {
          return yield* new OperatorError({ message: `No workspace ${workspaceId}` })
        }
        if (value === undefined) yield* workspaces.clearOverride(workspaceId, entitlement as EntitlementName)
        else yield* workspaces.setOverride(workspaceId, entitlement, value, yield* now)
        return { workspace_id: workspaceId, entitlement, value: value === undefined ? "cleared" : value }
      }
    )

    const setStatus = Effect.fn("Operator.setStatus")(function*(id: string, status: "active" | "suspended") {
      const at = yield* now
      const found = id.startsWith("usr_")
        ? yield* users.setStatus(id, status, at)
        : id.startsWith("ws_")
        ? yield* workspaces.setStatus(id, status, at)
        : false
      if (!found) return yield* new OperatorError({ message: `No user or workspace ${id}` })
      return { id, status }
    })

    return { createUser, setPlan, override, setStatus } as const
  }),
  dependencies: [Accounts.Default, UsersRepo.Default, WorkspacesRepo.Default]
}) {}
