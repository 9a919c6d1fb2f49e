import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** API keys: only a keyed hash of the secret is stored. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      name text NOT NULL,
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      secret_hash text NOT NULL UNIQUE,
      last4 text NOT NULL,
      scopes text[] NOT NULL,
      expires_at timestamptz,
      created_by text REFERENCES users (id),
      created_at timestamptz NOT NULL,
      last_used_at timestamptz,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX api_keys_workspace_created ON api_keys (workspace_id, created_at DESC, id DESC)`
})
