import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Contact imports (docs/API.md "Contact imports"): the row is the job and the queue. The file is
 * stored with it before the 202; the import worker processes `queued`/`running` rows in batches,
 * committing `processed_rows` and the counts with each batch's contacts, so a runner killed
 * mid-import resumes after the last committed batch.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE contact_imports (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
      on_conflict text NOT NULL CHECK (on_conflict IN ('skip', 'update')),
      default_country text,
      tags text[] NOT NULL DEFAULT '{}',
      group_id text,
      file text NOT NULL,
      total_rows integer NOT NULL,
      processed_rows integer NOT NULL DEFAULT 0,
      created integer NOT NULL DEFAULT 0,
      updated integer NOT NULL DEFAULT 0,
      skipped integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      errors jsonb NOT NULL DEFAULT '[]',
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      completed_at timestamptz
    )`
  yield* sql`CREATE INDEX contact_imports_list ON contact_imports (workspace_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX contact_imports_pending ON contact_imports (created_at) WHERE status IN ('queued', 'running')`
})
