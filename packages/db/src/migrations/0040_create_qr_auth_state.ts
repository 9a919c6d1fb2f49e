import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Baileys auth state of QR channels: one row per (channel, key type, key id); the
 * creds object is the row (channel, 'creds', ''). Values are Baileys' BufferJSON text, kept as
 * `text` so no driver or jsonb round trip rewrites the Buffer encoding.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE qr_auth_state (
      channel_id text NOT NULL,
      key_type text NOT NULL,
      key_id text NOT NULL,
      value text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (channel_id, key_type, key_id)
    )`
})
