/**
 * Sessions and their refresh tokens. A session is a refresh-token family: presenting a token
 * that was already rotated revokes the whole session.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Ids } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { dieOnDatabaseError, TimestampColumn } from "./Rows.js"

type SessionId = `ses_${string}`
type UserId = `usr_${string}`

export type RotateResult =
  | { readonly _tag: "Rotated"; readonly sessionId: SessionId; readonly userId: UserId }
  | { readonly _tag: "Reused"; readonly sessionId: SessionId }
  | { readonly _tag: "Invalid" }

/** A refresh token with its session, as `rotate` locks it (ids typed while decoding). */
const TokenRow = Schema.Struct({
  session_id: Ids.Id("ses"),
  rotated_at: Schema.NullOr(TimestampColumn),
  expires_at: TimestampColumn,
  revoked_at: Schema.NullOr(TimestampColumn),
  user_id: Ids.Id("usr")
})

export class SessionsRepo extends Effect.Service<SessionsRepo>()("@switchboard/db/SessionsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const create = Effect.fn("SessionsRepo.create")(function*(input: {
      readonly sessionId: string
      readonly userId: string
      readonly refreshTokenHash: string
      readonly refreshExpiresAt: string
      readonly now: string
    }) {
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO sessions (id, user_id, created_at) VALUES (${input.sessionId}, ${input.userId}, ${input.now})`
        yield* sql`INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at)
          VALUES (${input.refreshTokenHash}, ${input.sessionId}, ${input.now}, ${input.refreshExpiresAt})`
      }))
    }, dieOnDatabaseError)

    /** Whether the session exists and is not revoked. */
    const isActive = Effect.fn("SessionsRepo.isActive")(function*(sessionId: string) {
      const row = yield* SqlSchema.findOne({
        Request: Schema.Void,
        Result: Schema.Struct({ revoked_at: Schema.NullOr(TimestampColumn) }),
        execute: () => sql`SELECT revoked_at FROM sessions WHERE id = ${sessionId}`
      })(undefined)
      return Option.isSome(row) && row.value.revoked_at === null
    }, dieOnDatabaseError)

    /**
     * Exchanges a refresh token for a new one. Serialised on the token row (`FOR UPDATE`), so two
     * concurrent uses of the same token cannot both succeed.
     */
    const rotate = Effect.fn("SessionsRepo.rotate")(function*(input: {
      readonly tokenHash: string
      readonly newTokenHash: string
      readonly newExpiresAt: string
      readonly now: string
    }) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        const found = yield* SqlSchema.findOne({
          Request: Schema.Void,
          Result: TokenRow,
          execute: () =>
            sql`SELECT t.session_id, t.rotated_at, t.expires_at, s.revoked_at, s.user_id
              FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
              WHERE t.token_hash = ${input.tokenHash} FOR UPDATE OF t`
        })(undefined)
        const invalid: RotateResult = { _tag: "Invalid" }
        if (Option.isNone(found) || found.value.revoked_at !== null) return invalid
        const row = found.value
        if (row.rotated_at !== null) {
          yield* sql`UPDATE sessions SET revoked_at = ${input.now}, revoked_reason = 'refresh_token_reuse'
            WHERE id = ${row.session_id} AND revoked_at IS NULL`
          const reused: RotateResult = { _tag: "Reused", sessionId: row.session_id }
          return reused
        }
        if (new Date(row.expires_at).getTime() <= Date.parse(input.now)) return invalid
        yield* sql`UPDATE refresh_tokens SET rotated_at = ${input.now} WHERE token_hash = ${input.tokenHash}`
        yield* sql`INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at)
          VALUES (${input.newTokenHash}, ${row.session_id}, ${input.now}, ${input.newExpiresAt})`
        const rotated: RotateResult = { _tag: "Rotated", sessionId: row.session_id, userId: row.user_id }
        return rotated
      }))
    }, dieOnDatabaseError)

    const revoke = Effect.fn("SessionsRepo.revoke")(function*(sessionId: string, reason: string, now: string) {
      yield* sql`UPDATE sessions SET revoked_at = ${now}, revoked_reason = ${reason}
        WHERE id = ${sessionId} AND revoked_at IS NULL`
    }, dieOnDatabaseError)

    /** The session a refresh token belongs to, if any. */
    const sessionOfToken = Effect.fn("SessionsRepo.sessionOfToken")(function*(tokenHash: string) {
      const row = yield* SqlSchema.findOne({
        Request: Schema.Void,
        Result: Schema.Struct({ session_id: Ids.Id("ses") }),
        execute: () => sql`SELECT session_id FROM refresh_tokens WHERE token_hash = ${tokenHash}`
      })(undefined)
      return Option.map(row, (r) => r.session_id)
    }, dieOnDatabaseError)

    return { create, isActive, rotate, revoke, sessionOfToken } as const
  })
}) {}
