import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Webhook endpoints, deliveries (the delivery queue) and their attempts. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhook_endpoints (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      url text NOT NULL,
      event_types text[] NOT NULL,
      description text NOT NULL DEFAULT '',
      status text NOT NULL CHECK (status IN ('active', 'paused', 'disabled')),
      secret_sealed text NOT NULL,
      secret_last4 text NOT NULL,
      secret_rotated_at timestamptz,
      previous_secret_sealed text,
      previous_secret_expires_at timestamptz,
      consecutive_failures integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      deleted_at timestamptz
    )`
  yield* sql`CREATE INDEX webhook_endpoints_workspace ON webhook_endpoints (workspace_id) WHERE deleted_at IS NULL`
  yield* sql`
    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      endpoint_id text NOT NULL REFERENCES webhook_endpoints (id),
      workspace_id text NOT NULL,
      event_id text NOT NULL REFERENCES events (id),
      event_type text NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed', 'dead')),
      attempt_count integer NOT NULL DEFAULT 0,
      max_attempts integer NOT NULL DEFAULT 6,
      next_attempt_at timestamptz,
      response_status integer,
      failure_reason text,
      latency_ms integer,
      replay_count integer NOT NULL DEFAULT 0,
      replay_of text,
      is_test boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at, created_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_workspace ON webhook_deliveries (workspace_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE webhook_attempts (
      id bigserial PRIMARY KEY,
      delivery_id text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      at timestamptz NOT NULL,
      response_status integer,
      failure_reason text NOT NULL,
      latency_ms integer
    )`
  yield* sql`CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempt)`
})
