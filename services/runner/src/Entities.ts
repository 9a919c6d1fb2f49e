/** Every entity a runner hosts; the runner and standalone processes compose this layer. */
import { ChannelsRepo, MessagesRepo, WebhookDeliveriesRepo, WebhookEndpointsRepo } from "@switchboard/db"
import {
  ChannelEntityLive,
  MessageEntityLive,
  MessageSweeperLive,
  ProbeLive,
  WebhookEndpointEntityLive,
  WebhookSweeperLive
} from "@switchboard/entities"
import { SandboxProvider } from "@switchboard/providers"
import { Layer } from "effect"

/** Needs `ProvidersConfig` and `WebhooksConfig` (mains take them from the environment; tests set their own). */
export const layer = Layer.mergeAll(
  ProbeLive,
  ChannelEntityLive,
  MessageEntityLive,
  MessageSweeperLive,
  WebhookEndpointEntityLive,
  WebhookSweeperLive
).pipe(
  Layer.provide(Layer.mergeAll(
    SandboxProvider.Default,
    ChannelsRepo.Default,
    MessagesRepo.Default,
    WebhookEndpointsRepo.Default,
    WebhookDeliveriesRepo.Default
  ))
)
