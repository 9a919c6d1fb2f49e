/** A shard runner: hosts entities; listens for other nodes on `HOST:PORT` (cluster names). */
import { MigratedDatabase, RetentionSettings } from "@switchboard/db"
import { Cluster, ClusterAuthConfig } from "@switchboard/entities"
import { Launch, ListenFailure, MetricsConfig, MetricsServer, Redis } from "@switchboard/infra"
import { ProvidersConfig, QrConnectionConfig } from "@switchboard/providers"
import { WebhooksConfig } from "@switchboard/webhooks"
import { Layer } from "effect"
import * as Entities from "./Entities.js"
import * as Health from "./Health.js"

// unsafe production settings, logging, tracing and the one-line stops: `Launch.main`
Launch.main("runner", "switchboard-runner", () =>
  Cluster.hosting(Entities.layer).pipe(
    // its listener for other nodes on `HOST:PORT`: a busy or forbidden port is one line (`ListenFailure`)
    Layer.mapError(ListenFailure.refine({ name: "cluster", portSetting: "PORT" })),
    // GET /metrics, /health and /ready on its own listener when METRICS_PORT is set
    // (docs/CONFIGURATION.md "Metrics", docs/OPERATING.md "Health of a runner")
    (hosting) => Layer.merge(hosting, MetricsServer.layer.pipe(Layer.provide(Health.probes), Layer.provide(hosting))),
    Layer.provide([MigratedDatabase.layer, Redis.layerFromEnv]),
    // the settings are read first: one that does not parse stops the process before it opens a
    // database, with one line (`ConfigFailure`)
    Layer.provide([
      ClusterAuthConfig.layerFromEnv,
      ProvidersConfig.layerFromEnv,
      RetentionSettings.layerFromEnv,
      QrConnectionConfig.layerFromEnv,
      WebhooksConfig.layerFromEnv
    ]),
    // the metrics listener's settings read before anything else (a bad METRICS_PORT is one line)
    Layer.provide(MetricsConfig.layerFromEnv)
  ))
