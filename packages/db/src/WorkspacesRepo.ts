/** Workspaces: plan, status and entitlement overrides. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Plans } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { decodeRows, dieOnDatabaseError, iso, TimestampColumn } from "./Rows.js"

export interface WorkspaceRow {
  readonly id: string
  readonly name: string
  readonly plan: Plans.PlanName
  readonly status: "active" | "suspended"
  readonly created_at: string
  readonly updated_at: string
}

/** A row of `workspaces`. */
const WorkspaceColumns = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  plan: Plans.PlanName,
  status: Schema.Literal("active", "suspended"),
  created_at: TimestampColumn,
  updated_at: TimestampColumn
})

/** A workspace as the operator CLI lists it: with its owner's email and its member count. */
const decodeListed = decodeRows(Schema.Struct({
  ...WorkspaceColumns.pick("id", "name", "plan", "status", "created_at").fields,
  owner_email: Schema.NullOr(Schema.String),
  members: Schema.Number
}))

/** An entitlement override: its name and value (a number, a flag, a text or none). */
const decodeOverrides = decodeRows(Schema.Struct({
  entitlement: Schema.String,
  value: Plans.EntitlementValue
}))

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

    /** Every workspace, oldest first, with its owner and member count (the operator CLI's `list-workspaces`). */
    const listAll = Effect.fn("WorkspacesRepo.listAll")(function*(limit: number) {
      const rows = yield* decodeListed(
        yield* sql`SELECT w.id, w.name, w.plan, w.status, w.created_at,
          (SELECT u.email FROM workspace_members m JOIN users u ON u.id = m.user_id
            WHERE m.workspace_id = w.id AND m.role = 'owner' ORDER BY m.created_at LIMIT 1) AS owner_email,
          (SELECT count(*)::int FROM workspace_members m WHERE m.workspace_id = w.id) AS members
        FROM workspaces w ORDER BY w.created_at, w.id LIMIT ${limit}`
      )
      return rows.map((r) => ({ ...r, created_at: iso(r.created_at) }))
    }, dieOnDatabaseError)

    const setPlan = Effect.fn("WorkspacesRepo.setPlan")(function*(id: string, plan: Plans.PlanName, now: string) {
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
      const rows = yield* decodeOverrides(
        yield* sql`SELECT entitlement, value FROM entitlement_overrides WHERE workspace_id = ${id}`
      )
      return new Map(rows.map((r) => [r.entitlement, r.value] as const))
    }, dieOnDatabaseError)

    const setOverride = Effect.fn("WorkspacesRepo.setOverride")(
      function*(id: string, entitlement: string, value: Plans.EntitlementValue, now: string) {
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

    return { listAll, findById, setPlan, setStatus, overrides, setOverride, clearOverride } as const
  })
}) {}
