/** Every entity a runner hosts; the runner and standalone processes compose this layer. */
import { ChannelsRepo, MessagesRepo } from "@switchboard/db"
import { ChannelEntityLive, MessageEntityLive, MessageSweeperLive, ProbeLive } from "@switchboard/entities"
import { SandboxProvider } from "@switchboard/providers"
import { Layer } from "effect"

/** Needs `ProvidersConfig` (mains take it from the environment; tests set their own). */
export const layer = Layer.mergeAll(ProbeLive, ChannelEntityLive, MessageEntityLive, MessageSweeperLive).pipe(
  Layer.provide(Layer.mergeAll(SandboxProvider.Default, ChannelsRepo.Default, MessagesRepo.Default))
)
