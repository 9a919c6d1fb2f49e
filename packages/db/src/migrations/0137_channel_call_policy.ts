import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A QR channel's call policy (docs/QR-CHANNELS.md "Calls"): `{reject, reply_text}`; null until
 * set, read as "calls ring on" (`DEFAULT_CALL_POLICY`).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE channels ADD COLUMN call_policy jsonb`
})
