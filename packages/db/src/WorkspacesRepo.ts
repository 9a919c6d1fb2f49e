/** Workspaces: plan, status and entitlement overrides. */
import { SqlClient } from "@effect/sql"
import type { EntitlementValue, PlanName } from "@switchboard/domain"
import { Effect, Option } from "effect"
import { iso } from "./Rows.js"

export interface WorkspaceRow {
  readonly id: string
  readonly name: string
  readonly plan: PlanName
  readonly status: "active" | "suspended"
  readonly created_at: string
  readonly updated_at: string
}

export class WorkspacesRepo extends Effect.Service<WorkspacesRepo>()("@switchboard/db/WorkspacesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findById = Effect.fn("WorkspacesRepo.findById")(function*(id: string) {
      const rows = yield* sql<any>`SELECT * FROM workspaces WHERE id = ${id}`
      return Option.map(Option.fromNullable(rows[0]), (r): WorkspaceRow => ({
        id: r.id,
        name: r.name,
        plan: r.plan,
        status: r.status,
        created_at: iso(r.created_at),
        updated_at: iso(r.updated_at)
      }))
    }, Effect.orDie)

    const setPlan = Effect.fn("WorkspacesRepo.setPlan")(function*(id: string, plan: PlanName, now: string) {
      const rows = yield* sql`UPDATE workspaces SET plan = ${plan}, updated_at = ${now} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    }, Effect.orDie)

    const setStatus = Effect.fn("WorkspacesRepo.setStatus")(
      function*(id: string, status: "active" | "suspended", now: string) {
        const rows =
          yield* sql`UPDATE workspaces SET status = ${status}, updated_at = ${now} WHERE id = ${id} RETURNING id`
        return rows.length > 0
      },
      Effect.orDie
    )

    const overrides = Effect.fn("WorkspacesRepo.overrides")(function*(id: string) {
      const rows = yield* sql<{ entitlement: string; value: EntitlementValue }>`
        SELECT entitlement, value FROM entitlement_overrides WHERE workspace_id = ${id}`
      return new Map(rows.map((r) => [r.entitlement, r.value] as const))
    }, Effect.orDie)

    const setOverride = Effect.fn("WorkspacesRepo.setOverride")(
      function*(id: string, entitlement: string, value: EntitlementValue, now: string) {
        const json = JSON.stringify(value)
        yield* sql`INSERT INTO entitlement_overrides (workspace_id, entitlement, value, created_at)
          VALUES (${id}, ${entitlement}, ${json}::jsonb, ${now})
          ON CONFLICT (workspace_id, entitlement) DO UPDATE SET value = EXCLUDED.value, created_at = EXCLUDED.created_at`
      },
      Effect.orDie
    )

    const clearOverride = Effect.fn("WorkspacesRepo.clearOverride")(function*(id: string, entitlement: string) {
      yield* sql`DELETE FROM entitlement_overrides WHERE workspace_id = ${id} AND entitlement = ${entitlement}`
    }, Effect.orDie)

    return { findById, setPlan, setStatus, overrides, setOverride, clearOverride } as const
  })
}) {}
