/** Every entity a runner hosts; the runner and standalone processes compose this layer. */
import { PartitionsRepo, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import {
  ContactImportWorker,
  MessagingEntities,
  PartitionKeeper,
  ProbeEntity,
  ProviderInputBacklog,
  SweeperMetrics,
  WebhookEndpointEntity,
  WebhookMetrics,
  WebhookSweeper
} from "@switchboard/entities"
import { QrMetrics } from "@switchboard/providers"
import { Effect, Layer } from "effect"

/** Needs `ProvidersConfig` and `WebhooksConfig` (mains take them from the environment; tests set their own). */
export const layer = Layer.mergeAll(
  // the series a runner records exist at 0 from its start (docs/OPERATING.md "Metrics")
  Layer.effectDiscard(Effect.all([SweeperMetrics.prime, WebhookMetrics.prime, QrMetrics.prime], { discard: true })),
  ProbeEntity.ProbeLive,
  MessagingEntities.MessagingEntitiesLive,
  ContactImportWorker.ContactImportWorkerLive,
  PartitionKeeper.PartitionKeeperLive.pipe(Layer.provide(PartitionsRepo.PartitionsRepo.Default)),
  Layer.mergeAll(WebhookEndpointEntity.WebhookEndpointEntityLive, WebhookSweeper.WebhookSweeperLive).pipe(
    Layer.provide(
      Layer.mergeAll(
        WebhookEndpointsRepo.WebhookEndpointsRepo.Default,
        WebhookDeliveriesRepo.WebhookDeliveriesRepo.Default
      )
    )
  )
).pipe(
  // the runner's readiness reads it too (provider input waiting for the database)
  Layer.provideMerge(ProviderInputBacklog.layer)
)
