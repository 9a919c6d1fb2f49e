/**
 * `npm start`: the api node and a runner in one process (`SingleRunner`). Embedded database and
 * in-memory Redis stand-ins unless `DATABASE_URL` / `REDIS_URL` are set.
 */
import { MigratedDatabase, RetentionSettings } from "@switchboard/db"
import { Cluster } from "@switchboard/entities"
import { Launch, MetricsConfig, MetricsServer, Redis } from "@switchboard/infra"
import { ProvidersConfig, QrConnectionConfig } from "@switchboard/providers"
import { HttpConfig, HttpServer, IdentityConfig, Mailer } from "@switchboard/service-api"
import { Entities } from "@switchboard/service-runner"
import { WebhooksConfig } from "@switchboard/webhooks"
import { Layer } from "effect"

// unsafe production settings, logging, tracing and the one-line stops: `Launch.main`
Launch.main("standalone", "switchboard", () =>
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
      RetentionSettings.layerFromEnv,
      QrConnectionConfig.layerFromEnv,
      WebhooksConfig.layerFromEnv
    ]),
    // GET /metrics on its own listener when METRICS_PORT is set (docs/CONFIGURATION.md "Metrics")
    Layer.merge(MetricsServer.layer),
    // its settings read before anything else: a bad METRICS_PORT (or HTTP_PORT's own) is one line,
    // before any database
    Layer.provide(MetricsConfig.layerFromEnvApartFrom("HTTP_PORT", HttpConfig.DEFAULT_PORT))
  ))
