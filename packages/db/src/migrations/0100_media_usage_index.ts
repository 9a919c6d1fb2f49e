import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The stored media bytes of a workspace (`GET /v1/usage`, `current.media_bytes`) read from an
 * index alone: its ready media with their sizes.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX media_workspace_ready ON media (workspace_id) INCLUDE (size_bytes) WHERE status = 'ready'`
})
