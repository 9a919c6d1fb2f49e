/** An api node: serves HTTP; a cluster client only (hosts no entity). */
import { MigratedDatabase, RetentionSettings } from "@switchboard/db"
import { Cluster, ClusterAuthConfig } from "@switchboard/entities/protocol"
import { Launch, MetricsConfig, MetricsServer, Redis } from "@switchboard/infra"
import { ProvidersConfig } from "@switchboard/providers/contract"
import { WebhooksConfig } from "@switchboard/webhooks"
import { Layer } from "effect"
import * as HttpConfig from "./HttpConfig.js"
import * as HttpServer from "./HttpServer.js"
import * as IdentityConfig from "./IdentityConfig.js"
import * as Mailer from "./services/Mailer.js"

// unsafe production settings, logging, tracing and the one-line stops: `Launch.main`
Launch.main("api", "switchboard-api", () =>
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
      RetentionSettings.layerFromEnv,
      WebhooksConfig.layerFromEnv
    ]),
    // GET /metrics on its own listener when METRICS_PORT is set (docs/CONFIGURATION.md "Metrics")
    Layer.merge(MetricsServer.layer),
    // its settings read before anything else: a bad METRICS_PORT (or HTTP_PORT's own) is one line,
    // before any database
    Layer.provide(MetricsConfig.layerFromEnvApartFrom("HTTP_PORT", HttpConfig.DEFAULT_PORT))
  ))
