import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * QR safety:
 * - `qr_safety_limits`: operator-set caps that lower the platform's 200 sends per rolling 24 h,
 *   one per workspace (`channel_id` null) and one per channel at most;
 * - indexes for the count every QR send makes under its channel lock: messages handed to
 *   WhatsApp in the window (`sent_at`, or `updated_at` while `provider_accepted`) and messages
 *   not sent yet (`queued`, `dispatching`), per channel.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE qr_safety_limits (
      workspace_id text NOT NULL REFERENCES workspaces (id),
      channel_id text REFERENCES channels (id),
      daily_limit integer NOT NULL CHECK (daily_limit >= 0),
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX qr_safety_limits_workspace ON qr_safety_limits (workspace_id) WHERE channel_id IS NULL`
  yield* sql`CREATE UNIQUE INDEX qr_safety_limits_channel ON qr_safety_limits (channel_id) WHERE channel_id IS NOT NULL`
  yield* sql`CREATE INDEX messages_outbound_sent ON messages (channel_id, sent_at)
    WHERE direction = 'outbound' AND sent_at IS NOT NULL`
  yield* sql`CREATE INDEX messages_provider_accepted ON messages (channel_id, updated_at)
    WHERE status = 'provider_accepted'`
  yield* sql`CREATE INDEX messages_unsent ON messages (channel_id) WHERE status IN ('queued', 'dispatching')`
})
