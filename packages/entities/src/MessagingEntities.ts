/**
 * The messaging part of a runner: Channel and Message entities, the message and sandbox sweepers,
 * the media worker (inbound files, `MediaWorker.ts`), and what
 * they need (provider adapters, repositories). Needs `Sharding`, `SqlClient`, `ProvidersConfig`
 * and `QrConnectionConfig`; the runner, the standalone process and the entity tests compose this.
 */
import {
  ChannelsRepo,
  DispatchQueueRepo,
  MessagesRepo,
  QrRecipientChecksRepo,
  SandboxNetworkRepo,
  SandboxRepo,
  Transactions
} from "@switchboard/db"
import { ChannelProviders, QrProvider, SandboxProvider } from "@switchboard/providers"
import { Layer } from "effect"
import { ChannelEntityLive } from "./ChannelEntity.js"
import { GroupChatsSync } from "./GroupChatsSync.js"
import { InboundCalls } from "./InboundCalls.js"
import { InboundMessages } from "./InboundMessages.js"
import { MediaWorkerLive } from "./MediaWorker.js"
import { MessageEntityLive } from "./MessageEntity.js"
import { MessageMoves } from "./MessageMoves.js"
import { MessageSweeperLive } from "./MessageSweeper.js"
import { SandboxSweeperLive } from "./SandboxSweeper.js"

export const MessagingEntitiesLive = Layer.mergeAll(
  ChannelEntityLive,
  MessageEntityLive,
  MessageSweeperLive,
  SandboxSweeperLive,
  MediaWorkerLive
).pipe(
  Layer.provide(ChannelProviders.layer),
  Layer.provide(MessageMoves.Default),
  Layer.provide(
    Layer.mergeAll(
      SandboxProvider.SandboxProvider.Default,
      QrProvider.QrProvider.Default,
      ChannelsRepo.ChannelsRepo.Default,
      QrRecipientChecksRepo.QrRecipientChecksRepo.Default,
      MessagesRepo.MessagesRepo.Default,
      DispatchQueueRepo.DispatchQueueRepo.Default,
      InboundMessages.Default,
      InboundCalls.Default,
      GroupChatsSync.Default,
      Transactions.Transactions.Default,
      SandboxNetworkRepo.SandboxNetworkRepo.Default,
      SandboxRepo.SandboxRepo.Default
    )
  )
)
