/**
 * Sharding settings shared by EVERY node, client-only api nodes included (a
 * client left on the defaults routes to a dead runner for 35 s). With these a killed runner's
 * entities answer again in 7-10 s. Runners take `HOST`/`PORT` (and the other cluster names)
 * from the environment through `ShardingConfig.layerFromEnv`.
 */
import type { ShardingConfig } from "@effect/cluster"

export const shardingSettings: Partial<ShardingConfig.ShardingConfig["Type"]> = {
  // row-based shard locks (`cluster_locks`) that expire: a paused runner loses its shards after
  // `shardLockExpiration`; session advisory locks stayed held by its open connection for as long
  // as it was paused (docs/OPERATING.md "A paused runner")
  shardLockDisableAdvisory: true,
  shardLockRefreshInterval: "2 seconds",
  shardLockExpiration: "8 seconds",
  runnerHealthCheckInterval: "5 seconds",
  entityMessagePollInterval: "1 second",
  entityMailboxCapacity: "unbounded",
  refreshAssignmentsInterval: "2 seconds"
}
