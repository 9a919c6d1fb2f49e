import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Conversations as an inbox (docs/API.md "Conversations"): one row per (channel, contact) for good,
 * reopened by the next message instead of a second row, so the partial "one open" index becomes
 * a full unique key (no data had two rows per pair: nothing could close a conversation before);
 * the read marker and the newest inbound time; the thread's and the unread count's indexes; notes.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE conversations ADD COLUMN last_inbound_at timestamptz, ADD COLUMN last_read_at timestamptz`
  yield* sql`UPDATE conversations c SET last_inbound_at = (SELECT max(m.created_at) FROM messages m
    WHERE m.conversation_id = c.id AND m.direction = 'inbound')`
  yield* sql`CREATE UNIQUE INDEX conversations_channel_contact ON conversations (channel_id, contact_id)`
  yield* sql`DROP INDEX conversations_open`
  yield* sql`CREATE INDEX conversations_workspace_created ON conversations (workspace_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX messages_conversation_created ON messages (conversation_id, created_at DESC, id DESC)`
  // unread counts read only the contact's messages after the read marker (inbound rows only)
  yield* sql`CREATE INDEX messages_conversation_inbound ON messages (conversation_id, created_at)
    WHERE direction = 'inbound'`
  yield* sql`
    CREATE TABLE conversation_notes (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      conversation_id text NOT NULL REFERENCES conversations (id),
      body text NOT NULL,
      author_type text NOT NULL CHECK (author_type IN ('user', 'api_key')),
      author_id text NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX conversation_notes_thread ON conversation_notes (conversation_id, created_at DESC, id DESC)`
})
