/** Sandbox sessions on shared numbers, and their verified recipients (DECISIONS 6). */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { iso } from "./Rows.js"

export interface SandboxSessionRow {
  readonly id: string
  readonly workspace_id: string
  readonly channel_id: string
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

    const toRow = (r: any, recipients: ReadonlyArray<string>): SandboxSessionRow => ({
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
      }
    )

    /** Numbers of the pool held by an active, unexpired session. */
    const numbersInUse = Effect.fn("SandboxRepo.numbersInUse")(function*(now: string) {
      const rows = yield* sql<{ phone_number: string }>`SELECT phone_number FROM sandbox_sessions
        WHERE status = 'active' AND expires_at > ${now}`
      return new Set(rows.map((r) => r.phone_number))
    })

    /** Ends sessions past their expiry (their numbers return to the pool). */
    const expire = Effect.fn("SandboxRepo.expire")(function*(now: string) {
      return yield* sql<{ id: string; channel_id: string; workspace_id: string }>`UPDATE sandbox_sessions
        SET status = 'expired', updated_at = ${now}
        WHERE status = 'active' AND expires_at <= ${now} RETURNING id, channel_id, workspace_id`
    })

    const countActive = Effect.fn("SandboxRepo.countActive")(function*(workspaceId: string, now: string) {
      const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM sandbox_sessions
        WHERE workspace_id = ${workspaceId} AND status = 'active' AND expires_at > ${now}`
      return rows[0]?.n ?? 0
    })

    const find = Effect.fn("SandboxRepo.find")(function*(workspaceId: string, id: string) {
      const rows = yield* sql`SELECT * FROM sandbox_sessions WHERE workspace_id = ${workspaceId} AND id = ${id}`
      if (!rows[0]) return Option.none<SandboxSessionRow>()
      const recipients = yield* sql<{ phone_number: string }>`SELECT phone_number FROM sandbox_recipients
        WHERE session_id = ${id} ORDER BY verified_at`
      return Option.some(toRow(rows[0], recipients.map((r) => r.phone_number)))
    }, Effect.orDie)

    const findByChannel = Effect.fn("SandboxRepo.findByChannel")(function*(channelId: string) {
      const rows = yield* sql<
        { id: string; workspace_id: string }
      >`SELECT id, workspace_id FROM sandbox_sessions WHERE channel_id = ${channelId}`
      return rows[0] ? yield* find(rows[0].workspace_id, rows[0].id) : Option.none<SandboxSessionRow>()
    }, Effect.orDie)

    const addRecipient = Effect.fn("SandboxRepo.addRecipient")(
      function*(sessionId: string, phone: string, now: string) {
        yield* sql`INSERT INTO sandbox_recipients (session_id, phone_number, verified_at) VALUES (${sessionId}, ${phone}, ${now})
        ON CONFLICT DO NOTHING`
      },
      Effect.orDie
    )

    const isVerified = Effect.fn("SandboxRepo.isVerified")(function*(channelId: string, phone: string) {
      const rows = yield* sql`SELECT 1 FROM sandbox_recipients r JOIN sandbox_sessions s ON s.id = r.session_id
        WHERE s.channel_id = ${channelId} AND r.phone_number = ${phone}`
      return rows.length > 0
    }, Effect.orDie)

    /** Wrong codes so far, the row locked until the transaction ends (verifications of a session queue up). */
    const verifyFailuresForUpdate = Effect.fn("SandboxRepo.verifyFailuresForUpdate")(function*(id: string) {
      const rows = yield* sql<{ verify_failures: number }>`SELECT verify_failures FROM sandbox_sessions
        WHERE id = ${id} FOR UPDATE`
      return rows[0]?.verify_failures ?? 0
    }, Effect.orDie)

    /** Counts one more wrong code; returns the new count. */
    const recordVerifyFailure = Effect.fn("SandboxRepo.recordVerifyFailure")(function*(id: string, now: string) {
      const rows = yield* sql<{ verify_failures: number }>`UPDATE sandbox_sessions
        SET verify_failures = verify_failures + 1, updated_at = ${now} WHERE id = ${id} RETURNING verify_failures`
      return rows[0]?.verify_failures ?? 0
    }, Effect.orDie)

    const revoke = Effect.fn("SandboxRepo.revoke")(function*(workspaceId: string, id: string, now: string) {
      const rows = yield* sql`UPDATE sandbox_sessions SET status = 'revoked', updated_at = ${now}
        WHERE workspace_id = ${workspaceId} AND id = ${id} AND status = 'active' RETURNING id`
      return rows.length > 0
    })

    return {
      insert,
      numbersInUse,
      expire,
      countActive,
      find,
      findByChannel,
      addRecipient,
      isVerified,
      verifyFailuresForUpdate,
      recordVerifyFailure,
      revoke
    } as const
  })
}) {}
