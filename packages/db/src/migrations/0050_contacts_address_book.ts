import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The address book (docs/API.md "Contacts"): groups and their members, the indexes behind the
 * contact list filters, and contact deletion.
 *
 * `q` searches name, phone number and e-mail case-insensitively anywhere in the text: a trigram
 * GIN index over one lower-cased search text serves `LIKE '%...%'` (pg_trgm ships with Postgres
 * and is loaded into the embedded PGlite, packages/db `Database.ts`). Tags use a GIN index on
 * the array (`tags @> ARRAY[...]`).
 *
 * Deleting a contact removes its row and its group memberships; messages and conversations keep
 * their `contact_id`, which then no longer resolves (GET /v1/contacts/{id} is 404): the foreign
 * keys from `conversations` and `messages` are dropped so history stays readable.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`
  yield* sql`CREATE INDEX contacts_search ON contacts USING gin (
    (lower(coalesce(name, '') || ' ' || phone_number || ' ' || coalesce(email, ''))) gin_trgm_ops)`
  yield* sql`CREATE INDEX contacts_tags ON contacts USING gin (tags)`
  yield* sql`CREATE INDEX contacts_list ON contacts (workspace_id, created_at DESC, id DESC)`
  yield* sql`ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_contact_id_fkey`
  yield* sql`ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_contact_id_fkey`
  yield* sql`
    CREATE TABLE contact_groups (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      name text NOT NULL,
      description text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX contact_groups_name ON contact_groups (workspace_id, lower(name))`
  yield* sql`CREATE INDEX contact_groups_list ON contact_groups (workspace_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE contact_group_members (
      group_id text NOT NULL REFERENCES contact_groups (id) ON DELETE CASCADE,
      contact_id text NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (group_id, contact_id)
    )`
  yield* sql`CREATE INDEX contact_group_members_contact ON contact_group_members (contact_id)`
})
