/**
 * Idempotency keys: per workspace, kept 24 h, keyed to a fingerprint of the body.
 * `begin` claims a key or reports what an earlier request with it did. A claim is a lease held by
 * one request (`claim_id`) and renewed while it runs: a key whose request died is free again once
 * its lease ends, and only the holder of a claim can complete or release it.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnDatabaseError } from "./Rows.js"

export type Claim =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "Replay"; readonly response: unknown }
  | { readonly _tag: "Mismatch" }
  | { readonly _tag: "InProgress" }

export interface ClaimRef {
  readonly workspaceId: string
  readonly key: string
  /** the claiming request's own id: its renewals, completion and release touch only its claim */
  readonly claimId: string
}

/** What `begin` reads of a key it could not claim. */
const KeyRow = Schema.Struct({
  fingerprint: Schema.String,
  state: Schema.Literal("running", "done"),
  response: Schema.Unknown
})

const claimed: Claim = { _tag: "Claimed" }
const mismatch: Claim = { _tag: "Mismatch" }
const inProgress: Claim = { _tag: "InProgress" }

export class IdempotencyRepo extends Effect.Service<IdempotencyRepo>()("@switchboard/db/IdempotencyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const begin = Effect.fn("IdempotencyRepo.begin")(function*(
      input: ClaimRef & {
        readonly fingerprint: string
        readonly now: string
        readonly expiresAt: string
        readonly leaseUntil: string
      }
    ) {
      // one statement: a new key is inserted; an expired key is free again, and so is one whose
      // request stopped renewing its lease (its process died; its transaction rolled back, so
      // nothing of it was written): those are taken over in place. Any other existing key is left
      // alone (nothing returned). A claim from before leases existed is leased for 60 s.
      const inserted = yield* sql`INSERT INTO idempotency_keys
          (workspace_id, key, fingerprint, state, created_at, expires_at, claim_id, lease_until)
        VALUES (${input.workspaceId}, ${input.key}, ${input.fingerprint}, 'running', ${input.now}, ${input.expiresAt},
          ${input.claimId}, ${input.leaseUntil})
        ON CONFLICT (workspace_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, state = 'running',
          response = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
          claim_id = EXCLUDED.claim_id, lease_until = EXCLUDED.lease_until
        WHERE idempotency_keys.expires_at <= ${input.now}
          OR (idempotency_keys.state = 'running'
            AND COALESCE(idempotency_keys.lease_until, idempotency_keys.created_at + interval '60 seconds') < ${input.now})
        RETURNING key`
      if (inserted.length > 0) return claimed
      const found = yield* SqlSchema.findOne({
        Request: Schema.Void,
        Result: KeyRow,
        execute: () =>
          sql`SELECT fingerprint, state, response FROM idempotency_keys
            WHERE workspace_id = ${input.workspaceId} AND key = ${input.key}`
      })(undefined)
      if (Option.isNone(found)) return inProgress
      const row = found.value
      if (row.fingerprint !== input.fingerprint) return mismatch
      if (row.state !== "done") return inProgress
      const replay: Claim = { _tag: "Replay", response: row.response }
      return replay
    }, dieOnDatabaseError)

    /** Extends a running claim's lease; `false` when the claim is no longer this request's. */
    const renew = Effect.fn("IdempotencyRepo.renew")(function*(claim: ClaimRef, leaseUntil: string) {
      const rows = yield* sql`UPDATE idempotency_keys SET lease_until = ${leaseUntil}
        WHERE workspace_id = ${claim.workspaceId} AND key = ${claim.key} AND claim_id = ${claim.claimId}
          AND state = 'running'
        RETURNING key`
      return rows.length > 0
    }, dieOnDatabaseError)

    /**
     * Stores the response (call inside the transaction that did the work); `false` when another
     * request took the claim over (this one stalled past its lease): the caller must roll back.
     */
    const complete = Effect.fn("IdempotencyRepo.complete")(function*(claim: ClaimRef, response: unknown) {
      const rows = yield* sql`UPDATE idempotency_keys SET state = 'done', response = ${JSON.stringify(response)}::jsonb
        WHERE workspace_id = ${claim.workspaceId} AND key = ${claim.key} AND claim_id = ${claim.claimId}
          AND state = 'running'
        RETURNING key`
      return rows.length > 0
    }, dieOnDatabaseError)

    /** Frees a claimed key whose request failed before doing anything. */
    const release = Effect.fn("IdempotencyRepo.release")(function*(claim: ClaimRef) {
      yield* sql`DELETE FROM idempotency_keys
        WHERE workspace_id = ${claim.workspaceId} AND key = ${claim.key} AND claim_id = ${claim.claimId}
          AND state = 'running'`
    }, dieOnDatabaseError)

    return { begin, renew, complete, release } as const
  })
}) {}
