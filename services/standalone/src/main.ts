/**
 * `npm start`: the api node and a runner in one process (`SingleRunner`). Embedded database and
 * in-memory Redis stand-ins unless `DATABASE_URL` / `REDIS_URL` are set.
 */
import { NodeRuntime } from "@effect/platform-node"
import { MigratedDatabase } from "@switchboard/db"
import { Cluster } from "@switchboard/entities"
import { ListenFailure, Logging, MetricsServer, Redis, StartupSafety, Tracing } from "@switchboard/infra"
import { ProvidersConfig, QrConnectionConfig } from "@switchboard/providers"
import { HttpConfig, HttpServer, IdentityConfig, Mailer } from "@switchboard/service-api"
import { Entities } from "@switchboard/service-runner"
import { WebhooksConfig } from "@switchboard/webhooks"
import { Effect, Layer } from "effect"

// first: a production process with unsafe settings stops here, with one message
StartupSafety.refuseUnsafeProduction("standalone")

Layer.mergeAll(HttpServer.serverLayer, Entities.layer).pipe(
  Layer.provide(Cluster.single),
  Layer.provide([MigratedDatabase.layer, Redis.layerFromEnv]),
  // the settings are read first: one that does not parse stops the process before it creates or
  // opens a database, with one line (`ConfigFailure`)
  Layer.provide([
    HttpConfig.layerFromEnv,
    IdentityConfig.layerFromEnv,
    Mailer.layerFromEnv,
    ProvidersConfig.layerFromEnv,
    QrConnectionConfig.layerFromEnv,
    WebhooksConfig.layerFromEnv
  ]),
  Layer.merge(StartupSafety.warningsLayer("standalone")),
  // GET /metrics on its own listener when METRICS_PORT is set (docs/CONFIGURATION.md "Metrics")
  Layer.merge(MetricsServer.layerFromEnv),
  Layer.launch,
  Effect.provide(Tracing.layerFromEnv("switchboard").pipe(Layer.provideMerge(Logging.layer))),
  // a busy or forbidden port, or a setting that does not parse, stops the process with one line,
  // not a stack trace (`ListenFailure`, `ConfigFailure`)
  Effect.tapErrorCause(ListenFailure.logStop),
  NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
