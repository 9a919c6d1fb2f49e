import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Group chats of QR channels (docs/API.md "Group chats"): one row per (channel, WhatsApp group),
 * synced from WhatsApp, kept after the number left (`is_participant` false) so history stays
 * readable; its participants are contacts of the workspace, with their role.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE group_chats (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      channel_id text NOT NULL REFERENCES channels (id),
      whatsapp_group_id text NOT NULL,
      subject text NOT NULL,
      description text,
      announce_only boolean NOT NULL DEFAULT false,
      is_admin boolean NOT NULL DEFAULT false,
      is_participant boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX group_chats_channel_group ON group_chats (channel_id, whatsapp_group_id)`
  yield* sql`CREATE INDEX group_chats_channel_created ON group_chats (channel_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE group_chat_participants (
      group_chat_id text NOT NULL REFERENCES group_chats (id) ON DELETE CASCADE,
      contact_id text NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('member', 'admin', 'superadmin')),
      PRIMARY KEY (group_chat_id, contact_id)
    )`
})
