import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Wrong sandbox verification codes per session: after `MAX_VERIFY_FAILURES` (services/api
 * `Sandbox`) the session's verification is locked, whatever the HTTP rate limiter allows.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE sandbox_sessions ADD COLUMN verify_failures integer NOT NULL DEFAULT 0`
})
