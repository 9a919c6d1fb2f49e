/**
 * Fencing of a runner's decisions by its shard lease (docs/OPERATING.md "A paused runner"). A
 * runner holds a shard while its row in `cluster_locks` (@effect/cluster's row-based shard locks,
 * `shardLockDisableAdvisory`) names it and was refreshed within the lock expiry. A runner that was
 * paused (SIGSTOP, a VM freeze, a GC pause) longer than that has lost the shard to another runner,
 * but its fibers do not know it until they run again. So the statements that decide to do
 * something for an entity (take a message for a dispatch, take a webhook delivery for an attempt)
 * carry the lease: the statement moves nothing unless the lease is still this runner's, and it
 * holds the lease row (`FOR SHARE`) until it commits, so another runner cannot take the shard in
 * between: the takeover waits for the write, and the new owner's entity reads it.
 *
 * Facts are not fenced: an outcome of what the runner already did while it held the shard (the
 * provider accepted a dispatch, a receipt, an attempt's answer) is recorded whoever holds the
 * shard now, otherwise the new owner would repeat the work.
 */
import type { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"

export interface ShardLease {
  /** `group:id`, as @effect/cluster stores it (`default:17`) */
  readonly shardId: string
  /** the runner's address as stored (`host:port`) */
  readonly address: string
  /** the cluster's `shardLockExpiration`, in whole seconds */
  readonly expirySeconds: number
}

/**
 * True while `lease` is held; locks the lease row for the statement's transaction. The lease is
 * values, or (a statement that takes rows of many shards) the columns that hold them.
 */
export const leaseHeld = (
  sql: SqlClient.SqlClient,
  lease: ShardLease | { readonly [K in keyof ShardLease]: Statement.Fragment }
) =>
  sql`EXISTS (SELECT 1 FROM cluster_locks lease WHERE lease.shard_id = ${lease.shardId}
    AND lease.address = ${lease.address}
    AND lease.acquired_at >= NOW() - make_interval(secs => ${lease.expirySeconds}) FOR SHARE)`
