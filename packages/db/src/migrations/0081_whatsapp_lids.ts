import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Senders WhatsApp names only by their LID (docs/API.md "Contacts", "Messages"): a contact may have a
 * `whatsapp_lid` and no phone number yet (never neither), unique per workspace; what WhatsApp
 * reveals of LID <-> phone number is kept per channel (`whatsapp_lid_mappings`), so a later
 * message from the LID lands on the phone number's contact. The search index reads a missing
 * number as "".
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE contacts ALTER COLUMN phone_number DROP NOT NULL, ADD COLUMN whatsapp_lid text,
    ADD CONSTRAINT contacts_phone_or_lid CHECK (phone_number IS NOT NULL OR whatsapp_lid IS NOT NULL)`
  // the list's `q` search reads a number that may be missing now (same text otherwise)
  yield* sql`DROP INDEX contacts_search`
  yield* sql`CREATE INDEX contacts_search ON contacts USING gin (
    (lower(coalesce(name, '') || ' ' || coalesce(phone_number, '') || ' ' || coalesce(email, ''))) gin_trgm_ops)`
  yield* sql`CREATE UNIQUE INDEX contacts_workspace_lid ON contacts (workspace_id, whatsapp_lid)
    WHERE whatsapp_lid IS NOT NULL`
  yield* sql`
    CREATE TABLE whatsapp_lid_mappings (
      channel_id text NOT NULL REFERENCES channels (id),
      lid text NOT NULL,
      phone_number text NOT NULL,
      learned_at timestamptz NOT NULL,
      PRIMARY KEY (channel_id, lid)
    )`
})
