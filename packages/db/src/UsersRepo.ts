/** Users, their workspaces and memberships, e-mail verification tokens. */
import { SqlClient } from "@effect/sql"
import type { PlanName } from "@switchboard/domain"
import { Effect, Option } from "effect"
import { iso, isoOrNull } from "./Rows.js"

export interface UserRow {
  readonly id: string
  readonly email: string
  readonly name: string
  readonly password_hash: string
  readonly email_verified_at: string | null
  readonly status: "active" | "suspended"
  readonly created_at: string
}

export interface MembershipRow {
  readonly id: string
  readonly name: string
  readonly role: "owner" | "admin" | "member"
  readonly plan: PlanName
  readonly status: "active" | "suspended"
}

const toUser = (r: any): UserRow => ({
  id: r.id,
  email: r.email,
  name: r.name,
  password_hash: r.password_hash,
  email_verified_at: isoOrNull(r.email_verified_at),
  status: r.status,
  created_at: iso(r.created_at)
})

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
      readonly plan: PlanName
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
    })

    const findByEmail = Effect.fn("UsersRepo.findByEmail")(function*(email: string) {
      const rows = yield* sql`SELECT * FROM users WHERE lower(email) = lower(${email})`
      return Option.map(Option.fromNullable(rows[0]), toUser)
    }, Effect.orDie)

    const findById = Effect.fn("UsersRepo.findById")(function*(id: string) {
      const rows = yield* sql`SELECT * FROM users WHERE id = ${id}`
      return Option.map(Option.fromNullable(rows[0]), toUser)
    }, Effect.orDie)

    const memberships = Effect.fn("UsersRepo.memberships")(function*(userId: string) {
      return yield* sql<MembershipRow>`
        SELECT w.id, w.name, m.role, w.plan, w.status FROM workspace_members m
        JOIN workspaces w ON w.id = m.workspace_id
        WHERE m.user_id = ${userId} ORDER BY m.created_at, w.id`
    }, Effect.orDie)

    const membership = Effect.fn("UsersRepo.membership")(function*(userId: string, workspaceId: string) {
      const rows = yield* sql<MembershipRow>`
        SELECT w.id, w.name, m.role, w.plan, w.status FROM workspace_members m
        JOIN workspaces w ON w.id = m.workspace_id
        WHERE m.user_id = ${userId} AND m.workspace_id = ${workspaceId}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const setStatus = Effect.fn("UsersRepo.setStatus")(
      function*(id: string, status: "active" | "suspended", now: string) {
        const rows = yield* sql`UPDATE users SET status = ${status}, updated_at = ${now} WHERE id = ${id} RETURNING id`
        return rows.length > 0
      },
      Effect.orDie
    )

    const insertVerificationToken = Effect.fn("UsersRepo.insertVerificationToken")(
      function*(userId: string, tokenHash: string, expiresAt: string) {
        yield* sql`INSERT INTO email_verification_tokens (token_hash, user_id, expires_at)
          VALUES (${tokenHash}, ${userId}, ${expiresAt})`
      },
      Effect.orDie
    )

    /** Uses a verification token once; returns the user it verified. */
    const consumeVerificationToken = Effect.fn("UsersRepo.consumeVerificationToken")(
      function*(tokenHash: string, now: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<{ user_id: string }>`
            UPDATE email_verification_tokens SET used_at = ${now}
            WHERE token_hash = ${tokenHash} AND used_at IS NULL AND expires_at > ${now}
            RETURNING user_id`
          const row = rows[0]
          if (!row) return Option.none<string>()
          yield* sql`UPDATE users SET email_verified_at = COALESCE(email_verified_at, ${now}), updated_at = ${now}
            WHERE id = ${row.user_id}`
          return Option.some(row.user_id)
        }))
      },
      Effect.orDie
    )

    return {
      createWithWorkspace,
      findByEmail,
      findById,
      memberships,
      membership,
      setStatus,
      insertVerificationToken,
      consumeVerificationToken
    } as const
  })
}) {}
