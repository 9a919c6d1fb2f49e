/** An api node: serves HTTP; a cluster client only (hosts no entity). */
import { NodeRuntime } from "@effect/platform-node"
import { MigratedDatabase } from "@switchboard/db"
import { Cluster } from "@switchboard/entities"
import { Logging, Redis } from "@switchboard/infra"
import { ProvidersConfig } from "@switchboard/providers"
import { WebhooksConfig } from "@switchboard/webhooks"
import { Effect, Layer } from "effect"
import * as HttpConfig from "./HttpConfig.js"
import * as HttpServer from "./HttpServer.js"
import * as IdentityConfig from "./IdentityConfig.js"
import * as Mailer from "./services/Mailer.js"

HttpServer.serverLayer.pipe(
  Layer.provide([
    HttpConfig.layerFromEnv,
    IdentityConfig.layerFromEnv,
    Mailer.layerFromEnv,
    ProvidersConfig.layerFromEnv,
    WebhooksConfig.layerFromEnv
  ]),
  Layer.provide(Cluster.client),
  Layer.provide([MigratedDatabase.layer, Redis.layerFromEnv]),
  Layer.launch,
  Effect.provide(Logging.layer),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
