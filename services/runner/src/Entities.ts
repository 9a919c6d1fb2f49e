/** Every entity a runner hosts; the runner and standalone processes compose this layer. */
import { WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import {
  ContactImportWorkerLive,
  MessagingEntitiesLive,
  ProbeLive,
  WebhookEndpointEntityLive,
  WebhookSweeperLive
} from "@switchboard/entities"
import { Layer } from "effect"

/** Needs `ProvidersConfig` and `WebhooksConfig` (mains take them from the environment; tests set their own). */
export const layer = Layer.mergeAll(
  ProbeLive,
  MessagingEntitiesLive,
  ContactImportWorkerLive,
  Layer.mergeAll(WebhookEndpointEntityLive, WebhookSweeperLive).pipe(
    Layer.provide(Layer.mergeAll(WebhookEndpointsRepo.Default, WebhookDeliveriesRepo.Default))
  )
)
