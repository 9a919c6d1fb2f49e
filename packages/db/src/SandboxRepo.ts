/** Sandbox sessions on shared numbers, and their verified recipients. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Ids } from "@switchboard/domain"
import { Effect, Option, Schema } from "effect"
import { CountRow, decodeRows, dieOnDatabaseError, iso, TimestampColumn } from "./Rows.js"

/**
 * The transaction-scoped advisory lock that serialises sandbox session allocations (two sessions
 * never take the same number of the pool). Any constant no other lock in the database uses.
 */
export const SANDBOX_ALLOCATION_LOCK = 424242

/** A row of `sandbox_sessions` (its ids checked and typed while decoding). */
const SessionRow = Schema.Struct({
  id: Ids.Id("sbx"),
  workspace_id: Schema.String,
  channel_id: Ids.Id("ch"),
  phone_number: Schema.String,
  status: Schema.Literal("active", "revoked", "expired"),
  code_hash: Schema.String,
  expires_at: TimestampColumn,
  created_at: TimestampColumn,
  updated_at: TimestampColumn
})

const PhoneRow = Schema.Struct({ phone_number: Schema.String })
const HeldRow = Schema.Struct({ phone_number: Schema.String, expires_at: TimestampColumn })
const SessionRef = Schema.Struct({ id: Schema.String, workspace_id: Schema.String })
const ExpiredRow = Schema.Struct({ id: Schema.String, channel_id: Schema.String, workspace_id: Schema.String })
const decodeVerifyFailures = decodeRows(Schema.Struct({ verify_failures: Schema.Number }))

/**
 * A session as the Sandbox use-cases read it (its code's hash, its verified recipients). Not
 * decoded to the wire's `SandboxSession` here: that class is the contract's (`@switchboard/api`,
 * which this package may not import), and a session's status as read depends on the time of the read.
 */
export interface SandboxSessionRow {
  readonly id: `sbx_${string}`
  readonly workspace_id: string
  readonly channel_id: `ch_${string}`
  readonly phone_number: string
  readonly status: "active" | "revoked" | "expired"
  readonly code_hash: string
  readonly expires_at: string
  readonly created_at: string
  readonly updated_at: string
  readonly verified_recipients: ReadonlyArray<string>
}

export class SandboxRepo extends Effect.Service<SandboxRepo>()("@switchboard/db/SandboxRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const toRow = (r: typeof SessionRow.Type, recipients: ReadonlyArray<string>): SandboxSessionRow => ({
      id: r.id,
      workspace_id: r.workspace_id,
      channel_id: r.channel_id,
      phone_number: r.phone_number,
      status: r.status,
      code_hash: r.code_hash,
      expires_at: iso(r.expires_at),
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
      verified_recipients: recipients
    })

    const insert = Effect.fn("SandboxRepo.insert")(
      function*(row: Omit<SandboxSessionRow, "verified_recipients" | "updated_at">) {
        yield* sql`INSERT INTO sandbox_sessions (id, workspace_id, channel_id, phone_number, status, code_hash, expires_at, created_at, updated_at)
        VALUES (${row.id}, ${row.workspace_id}, ${row.channel_id}, ${row.phone_number}, ${row.status}, ${row.code_hash},
          ${row.expires_at}, ${row.created_at}, ${row.created_at})`
      },
      dieOnDatabaseError
    )

    /** Takes `SANDBOX_ALLOCATION_LOCK` until the caller's transaction ends. */
    const lockAllocations = Effect.fn("SandboxRepo.lockAllocations")(function*() {
      yield* sql`SELECT pg_advisory_xact_lock(${SANDBOX_ALLOCATION_LOCK})`
    }, dieOnDatabaseError)

    const inUse = SqlSchema.findAll({
      Request: Schema.Void,
      Result: HeldRow,
      execute: () => sql`SELECT phone_number, expires_at FROM sandbox_sessions WHERE status = 'active'`
    })

    /**
     * Numbers of the pool held by an `active` session, expired or not, each with when its session
     * expires: exactly what the unique index `sandbox_sessions_number` holds (call `expire` first,
     * under the allocation lock, to free the numbers of sessions past their expiry).
     */
    const numbersInUse = Effect.fn("SandboxRepo.numbersInUse")(function*() {
      const rows = yield* inUse(undefined)
      return new Map(rows.map((r) => [r.phone_number, iso(r.expires_at)] as const))
    }, dieOnDatabaseError)

    const expired = SqlSchema.findAll({
      Request: Schema.String,
      Result: ExpiredRow,
      execute: (now) =>
        sql`UPDATE sandbox_sessions SET status = 'expired', updated_at = ${now}
          WHERE status = 'active' AND expires_at <= ${now} RETURNING id, channel_id, workspace_id`
    })

    /** Ends sessions past their expiry (their numbers return to the pool). */
    const expire = Effect.fn("SandboxRepo.expire")(function*(now: string) {
      return yield* expired(now)
    }, dieOnDatabaseError)

    const ended = SqlSchema.findAll({
      Request: Schema.Number,
      Result: ExpiredRow,
      execute: (limit) =>
        sql`SELECT s.id, s.channel_id, s.workspace_id FROM sandbox_sessions s JOIN channels c ON c.id = s.channel_id
          WHERE s.status <> 'active' AND c.status <> 'archived' ORDER BY s.id LIMIT ${limit}`
    })

    /** Ended (expired or revoked) sessions whose channel is not archived yet. */
    const endedWithLiveChannel = Effect.fn("SandboxRepo.endedWithLiveChannel")(function*(limit: number) {
      return yield* ended(limit)
    }, dieOnDatabaseError)

    const active = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, now: Schema.String }),
      Result: CountRow,
      execute: ({ now, workspaceId }) =>
        sql`SELECT count(*)::int AS n FROM sandbox_sessions
          WHERE workspace_id = ${workspaceId} AND status = 'active' AND expires_at > ${now}`
    })

    const countActive = Effect.fn("SandboxRepo.countActive")(function*(workspaceId: string, now: string) {
      return Option.match(yield* active({ workspaceId, now }), { onNone: () => 0, onSome: (row) => row.n })
    }, dieOnDatabaseError)

    const session = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, id: Schema.String }),
      Result: SessionRow,
      execute: ({ id, workspaceId }) =>
        sql`SELECT * FROM sandbox_sessions WHERE workspace_id = ${workspaceId} AND id = ${id}`
    })
    const recipientsOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: PhoneRow,
      execute: (id) => sql`SELECT phone_number FROM sandbox_recipients WHERE session_id = ${id} ORDER BY verified_at`
    })
    const sessionOfChannel = SqlSchema.findOne({
      Request: Schema.String,
      Result: SessionRef,
      execute: (channelId) => sql`SELECT id, workspace_id FROM sandbox_sessions WHERE channel_id = ${channelId}`
    })

    const pageOf = SqlSchema.findAll({
      Request: Schema.Struct({
        workspaceId: Schema.String,
        limit: Schema.Number,
        now: Schema.String,
        status: Schema.UndefinedOr(Schema.Literal("active", "revoked", "expired")),
        after: Schema.UndefinedOr(Schema.Struct({ created_at: Schema.String, id: Schema.String }))
      }),
      Result: SessionRow,
      execute: ({ after, limit, now, status, workspaceId }) => {
        // the status a reader sees: an active session past its expiry reads `expired` already
        const byStatus = status === undefined
          ? sql``
          : status === "active"
          ? sql`AND status = 'active' AND expires_at > ${now}`
          : status === "expired"
          ? sql`AND (status = 'expired' OR (status = 'active' AND expires_at <= ${now}))`
          : sql`AND status = 'revoked'`
        const from = after === undefined
          ? sql``
          : sql`AND (created_at, id) < (${after.created_at}::timestamptz, ${after.id})`
        return sql`SELECT * FROM sandbox_sessions WHERE workspace_id = ${workspaceId} ${byStatus} ${from}
          ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
      }
    })
    const recipientsOfMany = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: Schema.Struct({ session_id: Schema.String, phone_number: Schema.String }),
      execute: (ids) =>
        sql`SELECT session_id, phone_number FROM sandbox_recipients WHERE session_id IN ${sql.in(ids)}
          ORDER BY verified_at`
    })

    /** Newest first; `limit + 1` rows so the caller can tell whether there is more. */
    const list = Effect.fn("SandboxRepo.list")(function*(query: {
      readonly workspaceId: string
      readonly limit: number
      readonly now: string
      readonly status: "active" | "revoked" | "expired" | undefined
      readonly after: { readonly created_at: string; readonly id: string } | undefined
    }) {
      const rows = yield* pageOf(query)
      const recipients = rows.length === 0 ? [] : yield* recipientsOfMany(rows.map((r) => r.id))
      return rows.map((row) => toRow(row, recipients.filter((r) => r.session_id === row.id).map((r) => r.phone_number)))
    }, dieOnDatabaseError)

    const find = Effect.fn("SandboxRepo.find")(function*(workspaceId: string, id: string) {
      const row = yield* session({ workspaceId, id })
      if (Option.isNone(row)) return Option.none<SandboxSessionRow>()
      const recipients = yield* recipientsOf(id)
      return Option.some(toRow(row.value, recipients.map((r) => r.phone_number)))
    }, dieOnDatabaseError)

    const findByChannel = Effect.fn("SandboxRepo.findByChannel")(function*(channelId: string) {
      const ref = yield* sessionOfChannel(channelId)
      return Option.isSome(ref) ? yield* find(ref.value.workspace_id, ref.value.id) : Option.none<SandboxSessionRow>()
    }, dieOnDatabaseError)

    const addRecipient = Effect.fn("SandboxRepo.addRecipient")(
      function*(sessionId: string, phone: string, now: string) {
        yield* sql`INSERT INTO sandbox_recipients (session_id, phone_number, verified_at) VALUES (${sessionId}, ${phone}, ${now})
        ON CONFLICT DO NOTHING`
      },
      dieOnDatabaseError
    )

    /** Wrong codes so far, the row locked until the transaction ends (verifications of a session queue up). */
    const verifyFailuresForUpdate = Effect.fn("SandboxRepo.verifyFailuresForUpdate")(function*(id: string) {
      const rows = yield* decodeVerifyFailures(
        yield* sql`SELECT verify_failures FROM sandbox_sessions WHERE id = ${id} FOR UPDATE`
      )
      return rows[0]?.verify_failures ?? 0
    }, dieOnDatabaseError)

    /** Counts one more wrong code; returns the new count. */
    const recordVerifyFailure = Effect.fn("SandboxRepo.recordVerifyFailure")(function*(id: string, now: string) {
      const rows = yield* decodeVerifyFailures(
        yield* sql`UPDATE sandbox_sessions
        SET verify_failures = verify_failures + 1, updated_at = ${now} WHERE id = ${id} RETURNING verify_failures`
      )
      return rows[0]?.verify_failures ?? 0
    }, dieOnDatabaseError)

    const revoke = Effect.fn("SandboxRepo.revoke")(function*(workspaceId: string, id: string, now: string) {
      const rows = yield* sql`UPDATE sandbox_sessions SET status = 'revoked', updated_at = ${now}
        WHERE workspace_id = ${workspaceId} AND id = ${id} AND status = 'active' RETURNING id`
      return rows.length > 0
    }, dieOnDatabaseError)

    return {
      insert,
      lockAllocations,
      numbersInUse,
      expire,
      endedWithLiveChannel,
      countActive,
      list,
      find,
      findByChannel,
      addRecipient,
      verifyFailuresForUpdate,
      recordVerifyFailure,
      revoke
    } as const
  })
}) {}
