/** A shard runner: hosts entities; listens for other nodes on `HOST:PORT` (cluster names). */
import { NodeRuntime } from "@effect/platform-node"
import { Infrastructure, Logging } from "@switchboard/db"
import { Cluster } from "@switchboard/entities"
import { ProvidersConfig, QrConnectionConfig } from "@switchboard/providers"
import { WebhooksConfig } from "@switchboard/webhooks"
import { Effect, Layer } from "effect"
import * as Entities from "./Entities.js"

Entities.layer.pipe(
  Layer.provide([ProvidersConfig.layerFromEnv, QrConnectionConfig.layerFromEnv, WebhooksConfig.layerFromEnv]),
  Layer.provide(Cluster.runner),
  Layer.provide(Infrastructure.layer),
  Layer.launch,
  Effect.provide(Logging.layer),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
