import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * - `messages.provider_message_id`: the provider's id of an inbound message, unique per channel,
 *   so a provider reporting the same inbound message twice records it once. (Outbound messages
 *   use OUR id as the provider's id; the column stays null for them.)
 * - `sandbox_deliveries` becomes the simulated network's own durable state: how often a message
 *   was offered, when it was accepted, and which receipts the network has reported. A message is
 *   accepted once; a reconnecting channel hears the receipts of what is still under way.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE messages ADD COLUMN provider_message_id text`
  yield* sql`CREATE UNIQUE INDEX messages_provider_message ON messages (channel_id, provider_message_id)
    WHERE provider_message_id IS NOT NULL`
  yield* sql`CREATE INDEX messages_in_flight ON messages (updated_at)
    WHERE status IN ('dispatching', 'provider_accepted')`
  yield* sql`ALTER TABLE sandbox_deliveries
    ADD COLUMN channel_id text,
    ADD COLUMN to_number text,
    ADD COLUMN offers integer NOT NULL DEFAULT 1,
    ADD COLUMN sent_at timestamptz,
    ADD COLUMN delivered_at timestamptz,
    ADD COLUMN read_at timestamptz,
    ALTER COLUMN accepted_at DROP NOT NULL`
  yield* sql`CREATE INDEX sandbox_deliveries_unfinished ON sandbox_deliveries (channel_id, accepted_at)
    WHERE accepted_at IS NOT NULL AND read_at IS NULL`
})
