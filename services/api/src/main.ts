/** An api node: serves HTTP; a cluster client only (hosts no entity). */
import { NodeRuntime } from "@effect/platform-node"
import { MigratedDatabase } from "@switchboard/db"
import { Cluster, ClusterAuthConfig } from "@switchboard/entities/protocol"
import { ListenFailure, Logging, MetricsServer, Redis, StartupSafety, Tracing } from "@switchboard/infra"
import { ProvidersConfig } from "@switchboard/providers/contract"
import { WebhooksConfig } from "@switchboard/webhooks"
import { Effect, Layer } from "effect"
import * as HttpConfig from "./HttpConfig.js"
import * as HttpServer from "./HttpServer.js"
import * as IdentityConfig from "./IdentityConfig.js"
import * as Mailer from "./services/Mailer.js"

// first: a production process with unsafe settings stops here, with one message
StartupSafety.refuseUnsafeProduction("api")

HttpServer.serverLayer.pipe(
  Layer.provide(Cluster.client),
  Layer.provide([MigratedDatabase.layer, Redis.layerFromEnv]),
  // the settings are read first: one that does not parse stops the process before it opens a
  // database, with one line (`ConfigFailure`)
  Layer.provide([
    ClusterAuthConfig.layerFromEnv,
    HttpConfig.layerFromEnv,
    IdentityConfig.layerFromEnv,
    Mailer.layerFromEnv,
    ProvidersConfig.layerFromEnv,
    WebhooksConfig.layerFromEnv
  ]),
  Layer.merge(StartupSafety.warningsLayer("api")),
  // GET /metrics on its own listener when METRICS_PORT is set (docs/CONFIGURATION.md "Metrics")
  Layer.merge(MetricsServer.layerFromEnv),
  Layer.launch,
  Effect.provide(Tracing.layerFromEnv("switchboard-api").pipe(Layer.provideMerge(Logging.layer))),
  // a busy or forbidden port, or a setting that does not parse, stops the process with one line,
  // not a stack trace (`ListenFailure`, `ConfigFailure`)
  Effect.tapErrorCause(ListenFailure.logStop),
  NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
