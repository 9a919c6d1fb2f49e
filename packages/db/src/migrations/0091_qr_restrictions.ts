import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * WhatsApp's restriction signals as a QR channel's state (docs/LIMITS.md, "Number protection"):
 * the reach-out timelock's end, and the new-chat quota WhatsApp last reported. While either holds,
 * sends to new contacts are refused.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE channels
    ADD COLUMN qr_timelock_until timestamptz,
    ADD COLUMN qr_new_chat_total integer,
    ADD COLUMN qr_new_chat_used integer,
    ADD COLUMN qr_new_chat_cycle_ends_at timestamptz,
    ADD COLUMN qr_restriction_reported_at timestamptz`
})
