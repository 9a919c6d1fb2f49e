/**
 * bench/spikes/effect4/Channel.ts and Cluster.ts on effect 3 (@effect/cluster 0.60.2): the
 * spike's Channel entity with its volatile `Wake`, and `NodeClusterSocket` (msgpack over TCP)
 * with runner and message storage in Postgres under their own table prefix.
 */
import { Entity, RunnerAddress, ShardingConfig, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { Rpc } from "@effect/rpc"
import { Layer, Option, Schema } from "effect"

export const Wake = Rpc.make("Wake", { payload: { message_id: Schema.String } })

export const Channel = Entity.make("Channel", [Wake])

/** beside the project's `cluster_*` tables (`CLUSTER_TABLE_PREFIX`: fresh tables per runner, as Channel.ts) */
const TABLE_PREFIX = process.env["CLUSTER_TABLE_PREFIX"] ?? "spike3"

/** A runner on `host:port` (it hosts entities), or a client only (`port` undefined). */
export const layer = (options: { readonly host: string; readonly port: number | undefined }) => {
  const config: Partial<ShardingConfig.ShardingConfig["Type"]> = options.port === undefined
    ? { runnerAddress: Option.none() }
    : { runnerAddress: Option.some(RunnerAddress.make(options.host, options.port)) }
  const storage = Layer.mergeAll(
    SqlMessageStorage.layerWith({ prefix: TABLE_PREFIX }),
    Layer.orDie(SqlRunnerStorage.layerWith({ prefix: TABLE_PREFIX }))
  ).pipe(Layer.provide(ShardingConfig.layer(config)))
  return NodeClusterSocket.layer({
    clientOnly: options.port === undefined,
    storage: "byo",
    shardingConfig: config
  }).pipe(Layer.provide(storage))
}
