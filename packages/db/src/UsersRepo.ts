/** Users, their workspaces and memberships, e-mail verification tokens. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Identity, Ids, Plans } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { decodeRows, dieOnDatabaseError, failOnUniqueViolation, iso, isoOrNull, TimestampColumn } from "./Rows.js"

/** A row of `users` (but its password's hash: `PasswordRow`). */
const UserColumns = Schema.Struct({
  id: Ids.Id("usr"),
  email: Schema.String,
  name: Schema.String,
  email_verified_at: Schema.NullOr(TimestampColumn),
  status: Schema.Literal("active", "suspended"),
  created_at: TimestampColumn
})

/**
 * A row of `users` decoded to the domain's `User`: the one shape of the resource
 * (docs/ARCHITECTURE.md "Adding a resource"). The id is checked and typed (`usr_...`) while
 * decoding, the timestamps become the wire's ISO strings, the password's hash is left out (a
 * login reads it with `findByEmail`); no mapper, no cast.
 */
export const UserRow = Schema.transform(UserColumns, Identity.User, {
  strict: true,
  decode: (row) => ({
    ...row,
    object: "user" as const,
    email_verified_at: isoOrNull(row.email_verified_at),
    created_at: iso(row.created_at)
  }),
  encode: ({ object: _, ...user }) => user
})
const decodeUser = Schema.decodeUnknown(UserRow)

/** A user as the operator CLI lists it: with the workspaces it is a member of, and its role in each. */
const decodeListed = decodeRows(Schema.Struct({
  ...UserColumns.fields,
  workspaces: Schema.NullOr(Schema.Array(Schema.Struct({ id: Ids.Id("ws"), role: Schema.String })))
}))
const PasswordRow = Schema.Struct({ password_hash: Schema.String })

/**
 * A workspace as its member sees it (`workspace_members` joined with `workspaces`), decoded to
 * the domain's `WorkspaceMembership` (the workspace's id checked and typed, `ws_...`).
 */
export const MembershipRow = Schema.transform(
  Schema.Struct({
    id: Ids.Id("ws"),
    name: Schema.String,
    role: Identity.Role,
    plan: Plans.PlanName,
    status: Schema.Literal("active", "suspended")
  }),
  Identity.WorkspaceMembership,
  { strict: true, decode: (row) => row, encode: (membership) => membership }
)

/** A member of a workspace: the user and their role in it. */
export const MemberRow = Schema.Struct({
  id: Ids.Id("usr"),
  name: Schema.String,
  email: Schema.String,
  role: Schema.Literal("owner", "admin", "member"),
  status: Schema.Literal("active", "suspended")
})
export type MemberRow = typeof MemberRow.Type

const UserIdRow = Schema.Struct({ user_id: Schema.String })

export class UsersRepo extends Effect.Service<UsersRepo>()("@switchboard/db/UsersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** A user, a workspace they own and the membership, in one transaction. */
    const createWithWorkspace = Effect.fn("UsersRepo.createWithWorkspace")(function*(input: {
      readonly userId: string
      readonly workspaceId: string
      readonly email: string
      readonly name: string
      readonly passwordHash: string
      readonly workspaceName: string
      readonly plan: Plans.PlanName
      readonly verifiedAt: string | null
      readonly now: string
    }) {
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO users (id, email, name, password_hash, email_verified_at, created_at, updated_at)
          VALUES (${input.userId}, ${input.email}, ${input.name}, ${input.passwordHash}, ${input.verifiedAt}, ${input.now}, ${input.now})`
        yield* sql`INSERT INTO workspaces (id, name, plan, created_at, updated_at)
          VALUES (${input.workspaceId}, ${input.workspaceName}, ${input.plan}, ${input.now}, ${input.now})`
        yield* sql`INSERT INTO workspace_members (workspace_id, user_id, role, created_at)
          VALUES (${input.workspaceId}, ${input.userId}, 'owner', ${input.now})`
      }))
    }, failOnUniqueViolation)

    const userById = SqlSchema.findOne({
      Request: Schema.String,
      Result: UserRow,
      execute: (id) => sql`SELECT * FROM users WHERE id = ${id}`
    })
    const membershipsOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: MembershipRow,
      execute: (userId) =>
        sql`SELECT w.id, w.name, m.role, w.plan, w.status FROM workspace_members m
        JOIN workspaces w ON w.id = m.workspace_id
        WHERE m.user_id = ${userId} ORDER BY m.created_at, w.id`
    })
    const membershipIn = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.String, workspaceId: Schema.String }),
      Result: MembershipRow,
      execute: ({ userId, workspaceId }) =>
        sql`SELECT w.id, w.name, m.role, w.plan, w.status FROM workspace_members m
        JOIN workspaces w ON w.id = m.workspace_id
        WHERE m.user_id = ${userId} AND m.workspace_id = ${workspaceId}`
    })

    const membersOf = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: Schema.String, limit: Schema.Number, after: Schema.NullOr(Schema.String) }),
      Result: MemberRow,
      execute: ({ after, limit, workspaceId }) =>
        sql`SELECT u.id, u.name, u.email, m.role, u.status FROM workspace_members m
        JOIN users u ON u.id = m.user_id
        WHERE m.workspace_id = ${workspaceId} ${after === null ? sql`` : sql`AND u.id > ${after}`}
        ORDER BY u.id LIMIT ${limit + 1}`
    })

    /**
     * A page of the workspace's members (the people a conversation can be assigned to) in user id
     * order, after the given user id: `limit + 1` rows, the extra one telling that there is more.
     */
    const members = Effect.fn("UsersRepo.members")(function*(workspaceId: string, limit: number, after?: string) {
      return yield* membersOf({ workspaceId, limit, after: after ?? null })
    }, dieOnDatabaseError)

    /** The user of an e-mail address (case-insensitively), with their password's hash (a login checks it). */
    const findByEmail = Effect.fn("UsersRepo.findByEmail")(function*(email: string) {
      const rows = yield* sql`SELECT * FROM users WHERE lower(email) = lower(${email})`
      if (rows[0] === undefined) return Option.none<{ readonly user: Identity.User; readonly passwordHash: string }>()
      const { password_hash } = yield* Schema.decodeUnknown(PasswordRow)(rows[0])
      return Option.some({ user: yield* decodeUser(rows[0]), passwordHash: password_hash })
    }, dieOnDatabaseError)

    const findById = Effect.fn("UsersRepo.findById")(function*(id: string) {
      return yield* userById(id)
    }, dieOnDatabaseError)

    const memberships = Effect.fn("UsersRepo.memberships")(function*(userId: string) {
      return yield* membershipsOf(userId)
    }, dieOnDatabaseError)

    const membership = Effect.fn("UsersRepo.membership")(function*(userId: string, workspaceId: string) {
      return yield* membershipIn({ userId, workspaceId })
    }, dieOnDatabaseError)

    const setStatus = Effect.fn("UsersRepo.setStatus")(
      function*(id: string, status: "active" | "suspended", now: string) {
        const rows = yield* sql`UPDATE users SET status = ${status}, updated_at = ${now} WHERE id = ${id} RETURNING id`
        return rows.length > 0
      },
      dieOnDatabaseError
    )

    const insertVerificationToken = Effect.fn("UsersRepo.insertVerificationToken")(
      function*(userId: string, tokenHash: string, expiresAt: string) {
        yield* sql`INSERT INTO email_verification_tokens (token_hash, user_id, expires_at)
          VALUES (${tokenHash}, ${userId}, ${expiresAt})`
      },
      dieOnDatabaseError
    )

    /** Uses a verification token once; returns the user it verified. */
    const consumeVerificationToken = Effect.fn("UsersRepo.consumeVerificationToken")(
      function*(tokenHash: string, now: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const used = yield* SqlSchema.findOne({
            Request: Schema.Void,
            Result: UserIdRow,
            execute: () =>
              sql`UPDATE email_verification_tokens SET used_at = ${now}
              WHERE token_hash = ${tokenHash} AND used_at IS NULL AND expires_at > ${now}
              RETURNING user_id`
          })(undefined)
          if (Option.isNone(used)) return Option.none<string>()
          const row = used.value
          yield* sql`UPDATE users SET email_verified_at = COALESCE(email_verified_at, ${now}), updated_at = ${now}
            WHERE id = ${row.user_id}`
          return Option.some(row.user_id)
        }))
      },
      dieOnDatabaseError
    )

    /** Every user, oldest first, with their workspaces and roles (the operator CLI's `list-users`). */
    const listAll = Effect.fn("UsersRepo.listAll")(function*(limit: number) {
      const rows = yield* decodeListed(
        yield* sql`SELECT u.id, u.email, u.name, u.status, u.email_verified_at, u.created_at,
          (SELECT json_agg(json_build_object('id', m.workspace_id, 'role', m.role) ORDER BY m.created_at)
            FROM workspace_members m WHERE m.user_id = u.id) AS workspaces
        FROM users u ORDER BY u.created_at, u.id LIMIT ${limit}`
      )
      return rows.map((r) => ({
        id: r.id,
        email: r.email,
        name: r.name,
        status: r.status,
        email_verified: r.email_verified_at !== null,
        created_at: iso(r.created_at),
        workspaces: r.workspaces ?? []
      }))
    }, dieOnDatabaseError)

    return {
      listAll,
      createWithWorkspace,
      findByEmail,
      findById,
      memberships,
      membership,
      members,
      setStatus,
      insertVerificationToken,
      consumeVerificationToken
    } as const
  })
}) {}
