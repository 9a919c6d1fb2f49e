import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * An `Idempotency-Key` claim is a lease (docs/RETRIES.md "Requests: idempotency"): the request
 * holding it renews `lease_until` while it runs, and `claim_id` names the holder, so a key whose
 * request died with its process is free again seconds later (it was a fixed 60 s), and only the
 * holder can complete or release it. Rows claimed before this migration have no lease: they count
 * as leased until `created_at` + 60 s, as before.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE idempotency_keys ADD COLUMN claim_id text, ADD COLUMN lease_until timestamptz`
})
