import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Users, memberships, e-mail verification, sessions and their refresh tokens. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE users (
      id text PRIMARY KEY,
      email text NOT NULL,
      name text NOT NULL,
      password_hash text NOT NULL,
      email_verified_at timestamptz,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX users_email ON users (lower(email))`
  yield* sql`
    CREATE TABLE workspace_members (
      workspace_id text NOT NULL REFERENCES workspaces (id),
      user_id text NOT NULL REFERENCES users (id),
      role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
      created_at timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, user_id)
    )`
  yield* sql`CREATE INDEX workspace_members_user ON workspace_members (user_id)`
  yield* sql`
    CREATE TABLE email_verification_tokens (
      token_hash text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id),
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`
  yield* sql`
    CREATE TABLE sessions (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id),
      created_at timestamptz NOT NULL,
      revoked_at timestamptz,
      revoked_reason text
    )`
  yield* sql`
    CREATE TABLE refresh_tokens (
      token_hash text PRIMARY KEY,
      session_id text NOT NULL REFERENCES sessions (id),
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      rotated_at timestamptz
    )`
  yield* sql`CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id)`
})
