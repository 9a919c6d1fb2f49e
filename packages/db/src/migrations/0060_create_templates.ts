import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Templates (docs/API.md "Templates"). A slug is unique per workspace, archived templates included
 * (a send names a template by slug: one slug, one template, ever). The send path's lookup by
 * slug is one read on that unique index.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE templates (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      slug text NOT NULL,
      name text NOT NULL,
      category text NOT NULL CHECK (category IN ('authentication', 'utility', 'marketing')),
      language text NOT NULL,
      body text NOT NULL,
      variables jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('active', 'archived')),
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      archived_at timestamptz,
      UNIQUE (workspace_id, slug)
    )`
  yield* sql`CREATE INDEX templates_workspace_created ON templates (workspace_id, created_at DESC, id DESC)`
})
