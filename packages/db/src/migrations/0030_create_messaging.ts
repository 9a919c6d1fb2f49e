import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Channels, contacts, conversations, messages with their timeline, idempotency keys and the
 * sandbox. A `queued` message row IS the dispatch queue.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE channels (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      name text NOT NULL,
      provider text NOT NULL CHECK (provider IN ('sandbox', 'qr', 'cloud')),
      status text NOT NULL,
      status_reason text,
      is_default boolean NOT NULL DEFAULT false,
      phone_number text,
      capabilities jsonb,
      capabilities_refreshed_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      archived_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX channels_name ON channels (workspace_id, lower(name)) WHERE archived_at IS NULL`
  yield* sql`CREATE UNIQUE INDEX channels_default ON channels (workspace_id) WHERE is_default AND archived_at IS NULL`
  yield* sql`CREATE INDEX channels_workspace_created ON channels (workspace_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE contacts (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      phone_number text NOT NULL,
      name text,
      email text,
      attributes jsonb NOT NULL DEFAULT '{}',
      tags text[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      UNIQUE (workspace_id, phone_number)
    )`
  yield* sql`
    CREATE TABLE conversations (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      channel_id text NOT NULL REFERENCES channels (id),
      contact_id text NOT NULL REFERENCES contacts (id),
      status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
      assignee_id text,
      last_message_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX conversations_open ON conversations (channel_id, contact_id) WHERE status = 'open'`
  yield* sql`
    CREATE TABLE messages (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      channel_id text NOT NULL REFERENCES channels (id),
      conversation_id text NOT NULL REFERENCES conversations (id),
      contact_id text NOT NULL REFERENCES contacts (id),
      direction text NOT NULL CHECK (direction IN ('outbound', 'inbound')),
      from_number text,
      to_number text NOT NULL,
      type text NOT NULL,
      body text NOT NULL,
      template jsonb,
      category text NOT NULL,
      priority smallint NOT NULL,
      status text NOT NULL,
      failure jsonb,
      metadata jsonb NOT NULL DEFAULT '{}',
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      sent_at timestamptz,
      delivered_at timestamptz,
      read_at timestamptz
    )`
  yield* sql`CREATE INDEX messages_queue ON messages (channel_id, priority, created_at, id) WHERE status = 'queued'`
  yield* sql`CREATE INDEX messages_workspace_created ON messages (workspace_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE message_transitions (
      id bigserial PRIMARY KEY,
      message_id text NOT NULL REFERENCES messages (id),
      from_state text,
      to_state text NOT NULL,
      reason text,
      at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX message_transitions_message ON message_transitions (message_id, id)`
  yield* sql`
    CREATE TABLE idempotency_keys (
      workspace_id text NOT NULL,
      key text NOT NULL,
      fingerprint text NOT NULL,
      state text NOT NULL CHECK (state IN ('running', 'done')),
      response jsonb,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, key)
    )`
  yield* sql`
    CREATE TABLE sandbox_sessions (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      channel_id text NOT NULL REFERENCES channels (id),
      phone_number text NOT NULL,
      status text NOT NULL CHECK (status IN ('active', 'revoked', 'expired')),
      code_hash text NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX sandbox_sessions_number ON sandbox_sessions (phone_number) WHERE status = 'active'`
  yield* sql`
    CREATE TABLE sandbox_recipients (
      session_id text NOT NULL REFERENCES sandbox_sessions (id),
      phone_number text NOT NULL,
      verified_at timestamptz NOT NULL,
      PRIMARY KEY (session_id, phone_number)
    )`
  yield* sql`
    CREATE TABLE sandbox_deliveries (
      message_id text PRIMARY KEY,
      accepted_at timestamptz NOT NULL
    )`
})
