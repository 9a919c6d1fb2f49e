/**
 * Idempotency keys: per workspace, kept 24 h, keyed to a fingerprint of the body.
 * `begin` claims a key or reports what an earlier request with it did.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { dieOnDatabaseError } from "./Rows.js"

export type Claim =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "Replay"; readonly response: unknown }
  | { readonly _tag: "Mismatch" }
  | { readonly _tag: "InProgress" }

export class IdempotencyRepo extends Effect.Service<IdempotencyRepo>()("@switchboard/db/IdempotencyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const begin = Effect.fn("IdempotencyRepo.begin")(function*(input: {
      readonly workspaceId: string
      readonly key: string
      readonly fingerprint: string
      readonly now: string
      readonly expiresAt: string
      /** a key still `running` since before this was abandoned (its process died mid-request) */
      readonly abandonedBefore: string
    }) {
      // one statement: a new key is inserted; an expired key is free again, and so is one whose
      // first request died half-way (its transaction rolled back, so nothing of it was written):
      // those are taken over in place. Any other existing key is left alone (nothing returned).
      const inserted =
        yield* sql`INSERT INTO idempotency_keys (workspace_id, key, fingerprint, state, created_at, expires_at)
        VALUES (${input.workspaceId}, ${input.key}, ${input.fingerprint}, 'running', ${input.now}, ${input.expiresAt})
        ON CONFLICT (workspace_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, state = 'running',
          response = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
        WHERE idempotency_keys.expires_at <= ${input.now}
          OR (idempotency_keys.state = 'running' AND idempotency_keys.created_at < ${input.abandonedBefore})
        RETURNING key`
      if (inserted.length > 0) return { _tag: "Claimed" } as Claim
      const rows = yield* sql<{ fingerprint: string; state: string; response: unknown }>`
        SELECT fingerprint, state, response FROM idempotency_keys WHERE workspace_id = ${input.workspaceId} AND key = ${input.key}`
      const row = rows[0]
      if (!row) return { _tag: "InProgress" } as Claim
      if (row.fingerprint !== input.fingerprint) return { _tag: "Mismatch" } as Claim
      if (row.state !== "done") return { _tag: "InProgress" } as Claim
      return { _tag: "Replay", response: row.response } as Claim
    }, dieOnDatabaseError)

    /** Stores the response (call inside the transaction that did the work). */
    const complete = Effect.fn("IdempotencyRepo.complete")(
      function*(workspaceId: string, key: string, response: unknown) {
        yield* sql`UPDATE idempotency_keys SET state = 'done', response = ${JSON.stringify(response)}::jsonb
        WHERE workspace_id = ${workspaceId} AND key = ${key}`
      },
      dieOnDatabaseError
    )

    /** Frees a claimed key whose request failed before doing anything. */
    const release = Effect.fn("IdempotencyRepo.release")(function*(workspaceId: string, key: string) {
      yield* sql`DELETE FROM idempotency_keys WHERE workspace_id = ${workspaceId} AND key = ${key} AND state = 'running'`
    }, dieOnDatabaseError)

    return { begin, complete, release } as const
  })
}) {}
