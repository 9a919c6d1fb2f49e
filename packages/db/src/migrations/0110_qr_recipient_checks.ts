import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * What a QR channel's health shows (docs/LIMITS.md, "Number protection"; docs/API.md "Contacts"):
 * - `qr_recipient_checks`: each channel's last answer from WhatsApp on whether a number is on it
 *   (one row per channel and number; `GET .../qr/safety` counts those of the last 24 h);
 * - the contact's own answer (`whatsapp_status`, `whatsapp_checked_at`: the latest check of any
 *   of the workspace's QR channels), read with the contact without a join;
 * - the channel's last restriction signal and its time (`qr_last_signal*`).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE qr_recipient_checks (
      channel_id text NOT NULL REFERENCES channels (id),
      phone_number text NOT NULL,
      on_whatsapp boolean NOT NULL,
      checked_at timestamptz NOT NULL,
      PRIMARY KEY (channel_id, phone_number)
    )`
  yield* sql`CREATE INDEX qr_recipient_checks_recent ON qr_recipient_checks (channel_id, checked_at)`
  yield* sql`ALTER TABLE contacts
    ADD COLUMN whatsapp_status text CHECK (whatsapp_status IN ('on_whatsapp', 'not_on_whatsapp')),
    ADD COLUMN whatsapp_checked_at timestamptz`
  yield* sql`ALTER TABLE channels
    ADD COLUMN qr_last_signal text,
    ADD COLUMN qr_last_signal_at timestamptz`
})
