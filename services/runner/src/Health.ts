/**
 * The runner's `/health` and `/ready`, on its metrics listener (`MetricsServer.Probes`; the runner
 * serves no other HTTP). `/health` answers while the process serves. `/ready` answers 200 only when
 * the runner does its work (docs/OPERATING.md "Health of a runner"):
 * - `database`: Postgres answers a `SELECT 1` within 2 s;
 * - `shards`: it holds shard locks (it has its place in the cluster);
 * - `lock_refresh`: the database confirmed one of its lock refreshes within the lock expiration
 *   (8 s), so its locks are its own;
 * - `provider_input`: no provider input (inbound message, receipt, ...) has waited longer than
 *   `PROVIDER_INPUT_READY_MAX_AGE` to be recorded (`ProviderInputBacklog`).
 * `assess` is the decision, a pure function of what was seen.
 */
import { ShardId, Sharding, ShardingConfig } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { ClusterSettings, LockRefresh, ProviderInputBacklog } from "@switchboard/entities"
import { MetricsServer } from "@switchboard/infra"
import { Clock, Duration, Effect, Layer, Option } from "effect"

/** How long `/ready` waits for Postgres. */
export const DATABASE_TIMEOUT = Duration.seconds(2)

export interface Seen {
  /** whether Postgres answered within `DATABASE_TIMEOUT` */
  readonly databaseAnswered: boolean
  readonly heldShards: number
  /** ms since the database last confirmed a lock refresh or acquire; none yet: `undefined` */
  readonly lockConfirmedAgoMs: number | undefined
  readonly lockExpirationMs: number
  /** why provider input makes the runner degraded, if it does */
  readonly providerInput: string | undefined
}

export const assess = (seen: Seen): Record<string, MetricsServer.Check> => ({
  database: seen.databaseAnswered
    ? { ok: true, detail: "answers" }
    : {
      ok: false,
      detail: `no answer within ${Duration.toMillis(DATABASE_TIMEOUT)} ms (refused, unreachable or slow)`
    },
  shards: seen.heldShards > 0
    ? { ok: true, detail: `holds ${seen.heldShards}` }
    : { ok: false, detail: "holds no shard lock" },
  lock_refresh: seen.lockConfirmedAgoMs === undefined
    ? { ok: false, detail: "no lock refresh confirmed yet" }
    : seen.lockConfirmedAgoMs <= seen.lockExpirationMs
    ? { ok: true, detail: `confirmed ${Math.round(seen.lockConfirmedAgoMs)} ms ago` }
    : {
      ok: false,
      detail: `last confirmed ${
        Math.round(seen.lockConfirmedAgoMs)
      } ms ago (locks expire after ${seen.lockExpirationMs} ms)`
    },
  provider_input: seen.providerInput === undefined
    ? { ok: true, detail: "nothing waits too long" }
    : { ok: false, detail: seen.providerInput }
})

/** The probes, from the runner's sharding, lock confirmations, provider input backlog and database. */
export const probes = Layer.effect(
  MetricsServer.Probes,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sharding = yield* Sharding.Sharding
    const config = yield* ShardingConfig.ShardingConfig
    const confirmations = yield* LockRefresh.LockConfirmations
    const backlog = yield* ProviderInputBacklog.ProviderInputBacklog
    const shards = config.availableShardGroups.flatMap((group) =>
      Array.from({ length: config.shardsPerGroup }, (_, i) => ShardId.make(group, i + 1))
    )
    const lockExpirationMs = Duration.toMillis(config.shardLockExpiration)
    return {
      ready: Effect.gen(function*() {
        const databaseAnswered = yield* sql`SELECT 1`.pipe(
          Effect.timeout(DATABASE_TIMEOUT),
          Effect.option,
          Effect.map(Option.isSome),
          Effect.catchAllDefect(() => Effect.succeed(false))
        )
        const now = yield* Clock.currentTimeMillis
        const last = confirmations.lastAt()
        return assess({
          databaseAnswered,
          heldShards: shards.reduce((n, shard) => n + (sharding.hasShardId(shard) ? 1 : 0), 0),
          lockConfirmedAgoMs: last === undefined ? undefined : now - last,
          lockExpirationMs,
          providerInput: yield* backlog.degraded
        })
      })
    }
  })
).pipe(Layer.provide(ShardingConfig.layerFromEnv(ClusterSettings.shardingSettings)))
