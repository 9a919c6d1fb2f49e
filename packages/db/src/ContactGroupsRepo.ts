/** Contact groups of a workspace and their members (`contact_groups`, `contact_group_members`). */
import { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { Contacts, Ids, type Pagination } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { decodeRows, dieOnDatabaseError, failOnUniqueViolation, IdRow, iso, TimestampColumn } from "./Rows.js"

/**
 * A `contact_groups` row with its member count, decoded to the domain's `ContactGroup`: the one
 * shape of the resource (docs/ARCHITECTURE.md "Adding a resource"). The id is checked and typed
 * (`grp_...`) while decoding, the timestamps become the wire's ISO strings; no mapper, no cast.
 */
const GroupRow = Schema.transform(
  Schema.Struct({
    id: Ids.Id("grp"),
    name: Schema.String,
    description: Schema.NullOr(Schema.String),
    member_count: Schema.Number,
    created_at: TimestampColumn,
    updated_at: TimestampColumn
  }),
  Contacts.ContactGroup,
  {
    strict: true,
    decode: (row) => ({
      ...row,
      object: "contact_group" as const,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at)
    }),
    encode: ({ object: _, ...group }) => group
  }
)
const decodeGroups = Schema.decodeUnknown(Schema.Array(GroupRow))
const decodeGroupIds = decodeRows(IdRow("grp"))

export class ContactGroupsRepo extends Effect.Service<ContactGroupsRepo>()("@switchboard/db/ContactGroupsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const select = (where: Statement.Fragment) =>
      sql`SELECT g.id, g.name, g.description, g.created_at, g.updated_at,
          (SELECT count(*)::int FROM contact_group_members m WHERE m.group_id = g.id) AS member_count
        FROM contact_groups g WHERE ${where}`

    /** A name already used in the workspace (case-insensitively): `UniqueViolation`. */
    const insert = Effect.fn("ContactGroupsRepo.insert")(function*(input: {
      readonly id: string
      readonly workspaceId: string
      readonly name: string
      readonly description: string | null
      readonly now: string
    }) {
      yield* sql`INSERT INTO contact_groups (id, workspace_id, name, description, created_at, updated_at)
        VALUES (${input.id}, ${input.workspaceId}, ${input.name}, ${input.description}, ${input.now}, ${input.now})`
    }, failOnUniqueViolation)

    const find = Effect.fn("ContactGroupsRepo.find")(function*(workspaceId: string, id: string) {
      const rows = yield* decodeGroups(yield* select(sql`g.workspace_id = ${workspaceId} AND g.id = ${id}`))
      return Option.fromNullable(rows[0])
    }, dieOnDatabaseError)

    const list = Effect.fn("ContactGroupsRepo.list")(
      function*(workspaceId: string, limit: number, after: Pagination.CursorPosition | undefined) {
        const rows = yield* select(sql`g.workspace_id = ${workspaceId}
          ${after ? sql`AND (g.created_at, g.id) < (${after.created_at}::timestamptz, ${after.id})` : sql``}
          ORDER BY g.created_at DESC, g.id DESC LIMIT ${limit + 1}`)
        return yield* decodeGroups(rows)
      },
      dieOnDatabaseError
    )

    const update = Effect.fn("ContactGroupsRepo.update")(function*(
      workspaceId: string,
      id: string,
      changes: { readonly name?: string | undefined; readonly description?: string | null | undefined },
      now: string
    ) {
      const rows = yield* sql`UPDATE contact_groups SET
          name = ${changes.name === undefined ? sql`name` : sql`${changes.name}`},
          description = ${changes.description === undefined ? sql`description` : sql`${changes.description}`},
          updated_at = ${now}
        WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`
      return rows.length > 0
    }, failOnUniqueViolation)

    /** Deletes the group and its memberships (not the contacts). */
    const remove = Effect.fn("ContactGroupsRepo.remove")(function*(workspaceId: string, id: string) {
      const rows =
        yield* sql`DELETE FROM contact_groups WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`
      return rows.length > 0
    }, dieOnDatabaseError)

    /** Which of `ids` are groups of the workspace. */
    const existingIds = Effect.fn("ContactGroupsRepo.existingIds")(
      function*(workspaceId: string, ids: ReadonlyArray<string>) {
        if (ids.length === 0) return new Set<string>()
        const rows = yield* decodeGroupIds(
          yield* sql`SELECT id FROM contact_groups WHERE workspace_id = ${workspaceId} AND id IN ${sql.in(ids)}`
        )
        return new Set<string>(rows.map((r) => r.id))
      },
      dieOnDatabaseError
    )

    /** Adds members; existing memberships stay as they are (idempotent). Returns how many were new. */
    const addMembers = Effect.fn("ContactGroupsRepo.addMembers")(
      function*(groupId: string, contactIds: ReadonlyArray<string>, now: string) {
        if (contactIds.length === 0) return 0
        const rows = yield* sql`INSERT INTO contact_group_members (group_id, contact_id, created_at)
          SELECT ${groupId}, c, ${now}::timestamptz FROM jsonb_array_elements_text(${
          JSON.stringify(contactIds)
        }::jsonb) AS c
          ON CONFLICT DO NOTHING RETURNING contact_id`
        return rows.length
      },
      dieOnDatabaseError
    )

    const removeMember = Effect.fn("ContactGroupsRepo.removeMember")(function*(groupId: string, contactId: string) {
      const rows = yield* sql`DELETE FROM contact_group_members
        WHERE group_id = ${groupId} AND contact_id = ${contactId} RETURNING contact_id`
      return rows.length > 0
    }, dieOnDatabaseError)

    /** Makes `groupIds` exactly the contact's groups. */
    const setGroupsOf = Effect.fn("ContactGroupsRepo.setGroupsOf")(
      function*(contactId: string, groupIds: ReadonlyArray<string>, now: string) {
        const json = JSON.stringify(groupIds)
        yield* sql`DELETE FROM contact_group_members WHERE contact_id = ${contactId}
          AND group_id NOT IN (SELECT jsonb_array_elements_text(${json}::jsonb))`
        yield* sql`INSERT INTO contact_group_members (group_id, contact_id, created_at)
          SELECT g, ${contactId}, ${now}::timestamptz FROM jsonb_array_elements_text(${json}::jsonb) AS g
          ON CONFLICT DO NOTHING`
      },
      dieOnDatabaseError
    )

    return { insert, find, list, update, remove, existingIds, addMembers, removeMember, setGroupsOf } as const
  })
}) {}
