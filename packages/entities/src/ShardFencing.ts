/**
 * Whether this process's entities fence their decisions by their shard lease (`ShardLease` of
 * @switchboard/db; docs/OPERATING.md "A paused runner"): on runners, which hold row-based shard
 * locks in Postgres (`cluster_locks`). The single-process topology (one runner, nobody to take
 * over; its embedded database has no lock table) does not.
 */
import { Entity, ShardingConfig } from "@effect/cluster"
import type { ShardLease } from "@switchboard/db"
import { Context, Duration, Effect, Layer, Option } from "effect"

export class ShardFencing extends Context.Reference<ShardFencing>()("@switchboard/entities/ShardFencing", {
  defaultValue: (): Option.Option<{ readonly expirySeconds: number }> => Option.none()
}) {}

/** Fencing on, with the cluster's lock expiry (a runner's). */
export const layer: Layer.Layer<ShardFencing, never, ShardingConfig.ShardingConfig> = Layer.effect(
  ShardFencing,
  Effect.map(
    ShardingConfig.ShardingConfig,
    (config) => Option.some({ expirySeconds: Math.ceil(Duration.toSeconds(config.shardLockExpiration)) })
  )
)

/**
 * The lease of the entity being built (read in its build effect): none when fencing is off or
 * outside an entity.
 */
export const currentLease: Effect.Effect<Option.Option<ShardLease.ShardLease>> = Effect.gen(function*() {
  const fencing = yield* ShardFencing
  const address = yield* Effect.serviceOption(Entity.CurrentAddress)
  const runner = yield* Effect.serviceOption(Entity.CurrentRunnerAddress)
  if (Option.isNone(fencing) || Option.isNone(address) || Option.isNone(runner)) return Option.none()
  return Option.some({
    shardId: address.value.shardId.toString(),
    address: `${runner.value.host}:${runner.value.port}`,
    expirySeconds: fencing.value.expirySeconds
  })
})
