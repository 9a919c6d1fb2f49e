/**
 * The spike's cluster on effect 4 (`effect/cluster` through `@effect/platform-node`'s
 * `NodeClusterSocket`, as the project's runner uses `NodeClusterRunnerSocket` on effect 3): the
 * socket protocol with binary serialization, runner and message storage in Postgres
 * (`SqlRunnerStorage`, `SqlMessageStorage`) under their own table prefix.
 */
import { NodeClusterSocket, NodeCrypto } from "@effect/platform-node"
import { Layer, Option } from "effect"
import { RunnerAddress, ShardingConfig, SqlMessageStorage, SqlRunnerStorage } from "effect/cluster"
import { TABLE_PREFIX } from "./Channel.js"

/** A runner on `host:port` (it hosts entities), or a client only (`port` undefined). */
export const layer = (options: { readonly host: string; readonly port: number | undefined }) => {
  const config: Partial<ShardingConfig.ShardingConfig["Service"]> = options.port === undefined
    ? { runnerAddress: Option.none() }
    : { runnerAddress: Option.some(RunnerAddress.make(options.host, options.port)) }
  const storage = Layer.mergeAll(
    SqlMessageStorage.layerWith({ prefix: TABLE_PREFIX }).pipe(Layer.provide(NodeCrypto.layerDigest)),
    Layer.orDie(SqlRunnerStorage.layerWith({ prefix: TABLE_PREFIX }))
  ).pipe(Layer.provide(ShardingConfig.layer(config)))
  return NodeClusterSocket.layer({
    clientOnly: options.port === undefined,
    storage: "byo",
    shardingConfig: config
  }).pipe(Layer.provide(storage))
}
