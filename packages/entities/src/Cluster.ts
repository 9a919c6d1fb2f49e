/**
 * The three topologies differ only in the layer chosen here (ARCHITECTURE 2):
 * - `runner`: hosts shards, talks to other nodes over TCP (`NodeClusterSocket`), Postgres storage;
 * - `client`: an api node that hosts nothing but reaches every entity;
 * - `single`: everything in one process (`SingleRunner`), what `npm start` runs. On the embedded
 *   database the runner registry is in memory (CLUSTER.md P8: SqlRunnerStorage deadlocks on the
 *   single connection); messages are still stored in the database.
 */
import { SingleRunner } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { DatabaseConfig } from "@switchboard/db"
import { Effect, Layer, Option } from "effect"
import { shardingSettings } from "./ClusterSettings.js"

export const runner = NodeClusterSocket.layer({ storage: "sql", shardingConfig: shardingSettings })

export const client = NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: shardingSettings })

export const single = Layer.unwrapEffect(Effect.map(DatabaseConfig.DatabaseConfig, (config) =>
  SingleRunner.layer({
    runnerStorage: Option.isNone(config.url) ? "memory" : "sql",
    shardingConfig: shardingSettings
  })))
