/** Workspaces: plan, status and entitlement overrides. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { PlanName } from "@switchboard/domain"
import type { EntitlementValue } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { dieOnDatabaseError, iso, TimestampColumn } from "./Rows.js"

export interface WorkspaceRow {
  readonly id: string
  readonly name: string
  readonly plan: PlanName
  readonly status: "active" | "suspended"
  readonly created_at: string
  readonly updated_at: string
}

/** A row of `workspaces`. */
const WorkspaceColumns = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  plan: PlanName,
  status: Schema.Literal("active", "suspended"),
  created_at: TimestampColumn,
  updated_at: TimestampColumn
})

export class WorkspacesRepo extends Effect.Service<WorkspacesRepo>()("@switchboard/db/WorkspacesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const workspace = SqlSchema.findOne({
      Request: Schema.String,
      Result: WorkspaceColumns,
      execute: (id) => sql`SELECT * FROM workspaces WHERE id = ${id}`
    })

    const findById = Effect.fn("WorkspacesRepo.findById")(function*(id: string) {
      return Option.map(yield* workspace(id), (r): WorkspaceRow => ({
        id: r.id,
        name: r.name,
        plan: r.plan,
        status: r.status,
        created_at: iso(r.created_at),
        updated_at: iso(r.updated_at)
      }))
    }, dieOnDatabaseError)

    const setPlan = Effect.fn("WorkspacesRepo.setPlan")(function*(id: string, plan: PlanName, now: string) {
      const rows = yield* sql`UPDATE workspaces SET plan = ${plan}, updated_at = ${now} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    }, dieOnDatabaseError)

    const setStatus = Effect.fn("WorkspacesRepo.setStatus")(
      function*(id: string, status: "active" | "suspended", now: string) {
        const rows =
          yield* sql`UPDATE workspaces SET status = ${status}, updated_at = ${now} WHERE id = ${id} RETURNING id`
        return rows.length > 0
      },
      dieOnDatabaseError
    )

    const overrides = Effect.fn("WorkspacesRepo.overrides")(function*(id: string) {
      const rows = yield* sql<{ entitlement: string; value: EntitlementValue }>`
        SELECT entitlement, value FROM entitlement_overrides WHERE workspace_id = ${id}`
      return new Map(rows.map((r) => [r.entitlement, r.value] as const))
    }, dieOnDatabaseError)

    const setOverride = Effect.fn("WorkspacesRepo.setOverride")(
      function*(id: string, entitlement: string, value: EntitlementValue, now: string) {
        const json = JSON.stringify(value)
        yield* sql`INSERT INTO entitlement_overrides (workspace_id, entitlement, value, created_at)
          VALUES (${id}, ${entitlement}, ${json}::jsonb, ${now})
          ON CONFLICT (workspace_id, entitlement) DO UPDATE SET value = EXCLUDED.value, created_at = EXCLUDED.created_at`
      },
      dieOnDatabaseError
    )

    const clearOverride = Effect.fn("WorkspacesRepo.clearOverride")(function*(id: string, entitlement: string) {
      yield* sql`DELETE FROM entitlement_overrides WHERE workspace_id = ${id} AND entitlement = ${entitlement}`
    }, dieOnDatabaseError)

    return { findById, setPlan, setStatus, overrides, setOverride, clearOverride } as const
  })
}) {}
