/**
 * How many Postgres connections a process may open, checked against the server at start
 * (docs/CONFIGURATION.md "Connection budget"). A process holds its pool (`DATABASE_POOL_SIZE`,
 * which also lends the cluster's shard-lock connection and every transaction) and at most one
 * connection beside it: the `LISTEN` client of the webhook sweeper and the media and contact import
 * workers (`Notifications`; `@effect/sql-pg` opens one apart from the pool, shared by all three, on a
 * runner holding any of them). N api nodes and M runners at pool size P need
 * N x P + M x (P + 1) connections, and the migration Job or an admin CLI run P + 1 more.
 *
 * A process whose own share cannot fit in the server's `max_connections` (less the slots reserved
 * for superusers) refuses to start with one line: its pool would fail with "too many clients"
 * under load, not at start. When the server has fewer free slots than the process's share right
 * now (other clients hold the rest), it starts and says so in a warning.
 */
import { SqlClient } from "@effect/sql"
import { Data, Effect, Schema } from "effect"

/** A row of `pg_settings` (its value as text). */
const decodeSettings = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ name: Schema.String, setting: Schema.String }))
)
const decodeCount = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({ count: Schema.Number })))

/** Connections a process opens besides its pool: the `LISTEN` client. */
export const BESIDES_POOL = 1

/** The most connections a process with a pool of `poolSize` opens. */
export const share = (poolSize: number): number => poolSize + BESIDES_POOL

export interface ServerLimits {
  readonly maxConnections: number
  /** `superuser_reserved_connections` plus `reserved_connections` (Postgres 16 and later) */
  readonly reserved: number
  /** connections open now, this process's first one included */
  readonly inUse: number
}

/** A process that refuses to start: logged as its one line (`ListenFailure.logStop`, the admin CLI). */
export class ConnectionBudgetExceeded extends Data.TaggedError("StartupRefusal")<{ readonly message: string }> {}

/** The refusal when a process's share cannot fit in the server at all; `undefined` when it can. */
export const refusal = (poolSize: number, server: ServerLimits): string | undefined => {
  const room = server.maxConnections - server.reserved
  return share(poolSize) <= room ? undefined : (
    `cannot start: DATABASE_POOL_SIZE=${poolSize} lets this process open up to ${share(poolSize)} Postgres ` +
    `connections, and the server takes at most ${room} (max_connections ${server.maxConnections}, ` +
    `${server.reserved} reserved for superusers): lower DATABASE_POOL_SIZE or raise max_connections ` +
    `(docs/CONFIGURATION.md "Connection budget")`
  )
}

/** The warning when the server has fewer free slots than the process's share now; `undefined` when it has enough. */
export const warning = (poolSize: number, server: ServerLimits): string | undefined => {
  const free = server.maxConnections - server.reserved - server.inUse + 1
  return share(poolSize) <= free ? undefined : (
    `Postgres has ${Math.max(0, free)} free connection(s) for this process now (max_connections ` +
    `${server.maxConnections}, ${server.reserved} reserved, ${server.inUse} open) and it may open up to ` +
    `${share(poolSize)}: under load its queries will wait or fail with "too many clients"; size max_connections ` +
    `for every process (docs/CONFIGURATION.md "Connection budget")`
  )
}

/** Reads the server's limits; fails with the one line when `poolSize` cannot fit, warns when it does not fit now. */
export const check = (poolSize: number): Effect.Effect<void, ConnectionBudgetExceeded, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* decodeSettings(
      yield* sql`SELECT name, setting FROM pg_settings
      WHERE name IN ('max_connections', 'superuser_reserved_connections', 'reserved_connections')`
    )
    const [{ count }] = yield* decodeCount(
      yield* sql`SELECT count(*)::int AS count FROM pg_stat_activity WHERE backend_type = 'client backend'`
    )
    const setting = (name: string) => Number(rows.find((r) => r.name === name)?.setting ?? 0)
    return {
      maxConnections: setting("max_connections"),
      reserved: setting("superuser_reserved_connections") + setting("reserved_connections"),
      inUse: count
    } satisfies ServerLimits
  }).pipe(
    // a server whose settings cannot be read is not refused for it
    Effect.catchAll((error) =>
      Effect.as(Effect.logDebug("could not read the Postgres connection limits", error), undefined)
    ),
    Effect.flatMap((server) => {
      if (server === undefined || server.maxConnections === 0) return Effect.void
      const refused = refusal(poolSize, server)
      if (refused !== undefined) return Effect.fail(new ConnectionBudgetExceeded({ message: refused }))
      const warned = warning(poolSize, server)
      return warned === undefined ? Effect.void : Effect.logWarning(warned)
    })
  )
