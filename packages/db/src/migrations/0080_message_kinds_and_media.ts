import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Every kind of inbound message (docs/API.md "Messages") and stored media (docs/API.md "Media"):
 * - `messages`: `content` (the member named after a non-text type, as the wire shows it),
 *   `reply_to` (the quoted message), `sender_lid` (WhatsApp's LID of the sender), `media_id` with
 *   the media's status and failure (kept on the message so lists read one table);
 * - `media`: one row per file, which is also the durable download job of an inbound file
 *   (`source`: the provider's handle, `attempts`, `next_attempt_at`, `claimed_at`);
 * - `media_chunks`: the bytes, in fixed-size chunks (`MediaStore.CHUNK_BYTES`), never loaded whole.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE messages ADD COLUMN content jsonb, ADD COLUMN reply_to text, ADD COLUMN sender_lid text,
    ADD COLUMN media_id text, ADD COLUMN media_status text, ADD COLUMN media_failure text`
  yield* sql`
    CREATE TABLE media (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      kind text NOT NULL,
      mime_type text NOT NULL,
      filename text,
      size_bytes bigint,
      sha256 text,
      status text NOT NULL CHECK (status IN ('pending', 'ready', 'failed', 'expired')),
      failure_reason text,
      channel_id text REFERENCES channels (id),
      message_id text,
      source jsonb,
      expected_size bigint,
      expected_sha256 text,
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      claimed_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX media_due ON media (next_attempt_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX media_expiring ON media (expires_at) WHERE status IN ('ready', 'failed')`
  yield* sql`CREATE INDEX messages_media ON messages (media_id) WHERE media_id IS NOT NULL`
  yield* sql`
    CREATE TABLE media_chunks (
      media_id text NOT NULL REFERENCES media (id) ON DELETE CASCADE,
      seq integer NOT NULL,
      data bytea NOT NULL,
      PRIMARY KEY (media_id, seq)
    )`
})
