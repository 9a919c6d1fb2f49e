/**
 * The whole standalone app in-process for HTTP integration tests: a fresh database for the file
 * (real Postgres or embedded), Redis or its stand-ins, a single runner hosting every entity, and
 * the HTTP layer on a random port. `HttpClient` requests go to that server.
 */
import { type DatabaseConfig, MigratedDatabase } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Cluster, ClusterSettings } from "@switchboard/entities"
import { Redis } from "@switchboard/infra"
import * as TestRedis from "@switchboard/infra/testing"
import { ProvidersConfig, QrConnectionConfig } from "@switchboard/providers"
import { HttpConfig, HttpServer, IdentityConfig, Mailer, Operator } from "@switchboard/service-api"
import { Entities } from "@switchboard/service-runner"
import { WebhooksConfig } from "@switchboard/webhooks"
import { Layer, Logger } from "effect"

/**
 * The app's own log lines stay out of a test run's output (a green run reads clean; deliberate
 * faults log errors by design). `TEST_LOGS=1 npm test` shows them. A test that asserts on logs
 * adds its own logger (`Logger.add`), which this leaves alone.
 */
export const quietLogs: Layer.Layer<never> = process.env["TEST_LOGS"]
  ? Layer.empty
  : Logger.remove(Logger.defaultLogger)

export const layer = (
  options: Partial<HttpConfig.HttpConfig["Type"]> = {},
  infrastructure: Infrastructure = {}
) =>
  appLayer(options, infrastructure).pipe(
    Layer.provideMerge(infrastructureLayer(infrastructure)),
    Layer.provide(quietLogs)
  )

export interface Infrastructure {
  readonly redisUrl?: string
  readonly providers?: Partial<ProvidersConfig.ProvidersConfig["Type"]>
  readonly webhooks?: Partial<WebhooksConfig.WebhooksConfig["Type"]>
  readonly qr?: Partial<QrConnectionConfig.QrConnectionConfig["Type"]>
  /** where the database is (default: a fresh one for the file, `TestDatabase.layer`); e.g. behind `PgProxy.layer` */
  readonly database?: Layer.Layer<DatabaseConfig.DatabaseConfig>
  /** sharding settings over the app's own (`Cluster.singleWith`) */
  readonly sharding?: Parameters<typeof Cluster.singleWith>[0]
}

/** The database (fresh for the caller) and Redis: outlives app instances built on it (a runner restart). */
export const infrastructureLayer = (infrastructure: Infrastructure = {}) =>
  Layer.merge(MigratedDatabase.layerWithConfig, Redis.layer).pipe(
    Layer.provideMerge(
      Layer.merge(infrastructure.database ?? TestDatabase.layer, TestRedis.configLayerWith(infrastructure))
    )
  )

/**
 * The in-process app's shard locks: refreshed every 5 s, expiring after 20 s (every process runs
 * 2 s and 8 s, `ClusterSettings`). The cluster takes its lock storage for unhealthy, and stops every
 * entity, when a refresh has not answered within the interval; this app shares its event loop with
 * the test, the fake WhatsApp server and the phone's Baileys, which held it for 2-3.6 s at a time
 * in a loaded run (`TEST_CPU_LOG`'s `maxStallMs`), and a QR pairing's stream ended with its entity
 * (docs/TESTING.md "Failed at load, and changed"). The files that test the locks run service
 * processes with every process's settings (`test/scaleRunners.e2e.test.ts`, `test/pausedRunner.e2e.test.ts`).
 */
const testLocks = { shardLockRefreshInterval: "5 seconds", shardLockExpiration: "20 seconds" } as const

/**
 * Every process's shard lock settings, for the in-process fault files (the app's Postgres failing
 * under it): a refresh then fails and the runner stops its entities as a production one does.
 */
export const processLocks = {
  shardLockRefreshInterval: ClusterSettings.shardingSettings.shardLockRefreshInterval!,
  shardLockExpiration: ClusterSettings.shardingSettings.shardLockExpiration!
}

/** Everything above the database: HTTP, the single runner and its entities. */
export const appLayer = (
  options: Partial<HttpConfig.HttpConfig["Type"]> = {},
  infrastructure: Infrastructure = {}
) =>
  Layer.mergeAll(HttpServer.layer, Entities.layer).pipe(
    Layer.provideMerge(HttpServer.listenerLayerTest),
    Layer.provideMerge(Layer.mergeAll(
      HttpConfig.layer({ logRequests: false, ...options }),
      // a run signs up hundreds of users: 64 KiB and one pass instead of 19 MiB and two (about 15 ms
      // of CPU a hash); what a process uses is services/api/test/PasswordHashing.test.ts's
      IdentityConfig.layer({ passwordHashing: { memoryCost: 64, timeCost: 1 } }),
      Mailer.layerMemory,
      ProvidersConfig.layer({
        retryDelayScale: 0.01,
        sandboxNumbers: Array.from({ length: 40 }, (_, i) => `+1555020${String(i).padStart(4, "0")}`),
        ...infrastructure.providers
      }),
      WebhooksConfig.layer({ retryDelayScale: 0.001, allowPrivateTargets: true, ...infrastructure.webhooks }),
      QrConnectionConfig.layer(infrastructure.qr ?? {})
    )),
    Layer.provideMerge(Cluster.singleWith({ ...testLocks, ...infrastructure.sharding })),
    Layer.provide(quietLogs)
  )

/** The operator use-cases (what the CLI runs), on the app's database. */
export const operatorLayer = Operator.Operator.Default
