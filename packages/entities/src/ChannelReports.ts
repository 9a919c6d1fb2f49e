/**
 * What a channel's provider connection reports besides messages and receipts, recorded on the
 * channel: status changes (then the dispatch loop looks again), WhatsApp's restrictions, LID
 * mappings (contacts merged: `InboundMessages.learnLid`), the group chats its number is in
 * (`GroupChatsSync`) and recipient checks. Each goes through the connection's `kept` (recorded
 * until Postgres takes it) and is handed to it in the link's order (`ChannelConnection`).
 */
import { ChannelsRepo, QrRecipientChecksRepo, type TransientRetry } from "@switchboard/db"
import { ChannelStateMachine, type Messaging, Schemas } from "@switchboard/domain"
import type { ChannelProvider } from "@switchboard/providers"
import { Clock, Effect, Queue } from "effect"
import { GroupChatsSync } from "./GroupChatsSync.js"
import { InboundMessages } from "./InboundMessages.js"
import { perEntity } from "./PerEntity.js"

/**
 * Records `record` until Postgres takes it, `what` naming it in the log (ChannelConnection's
 * retry policy: a `DatabaseUnavailable` is never the end, anything else is logged).
 */
export type Kept = (
  what: string
) => <E>(record: Effect.Effect<void, E | TransientRetry.DatabaseUnavailable>) => Effect.Effect<void>

/** The recorders of one channel's reports; `wake` is offered after each recorded status change. */
export const makeChannelReports = (options: {
  readonly channelId: string
  readonly wake: Queue.Enqueue<void>
  readonly kept: Kept
}) =>
  Effect.gen(function*() {
    const { channelId, kept, wake } = options
    const channels = yield* ChannelsRepo.ChannelsRepo
    const recipientChecks = yield* QrRecipientChecksRepo.QrRecipientChecksRepo
    const inbound = yield* InboundMessages
    const groupChats = yield* GroupChatsSync

    /** A LID's number became known: kept, contacts merged (in order with status changes). */
    const onLidMapped = perEntity((event: ChannelProvider.LidMapped) =>
      kept("WhatsApp LID mapping")(inbound.learnLid(channelId, event.lid, event.phoneNumber))
    )

    /** Records a status change the link reported (in order), then lets the loop look again. */
    const onStatusChanged = perEntity(
      (connection: ChannelProvider.ChannelConnection) => (event: ChannelProvider.StatusChanged) =>
        Effect.gen(function*() {
          yield* kept("channel status")(Effect.gen(function*() {
            const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
            yield* channels.recordProviderStatus({
              id: channelId,
              from: event.from,
              to: event.to,
              reason: event.reason,
              requiresRepair: event.requiresRepair,
              phoneNumber: event.phoneNumber,
              capabilities: connection.capabilities,
              now
            })
            // logged out: the channel is in no group chat until a link reports them again (a
            // retry after the status was recorded still marks them: it changes only those marked in)
            if (ChannelStateMachine.forgetsLink(event.reason)) yield* groupChats.unlinked(channelId, now)
          }))
          yield* Queue.offer(wake, undefined)
        })
    )

    /** Records a restriction WhatsApp reported (timelock, new-chat quota) on the channel. */
    const onRestriction = perEntity((event: ChannelProvider.RestrictionReported) =>
      kept("channel restriction")(Effect.gen(function*() {
        const q = event.newChatQuota
        yield* channels.recordRestriction({
          channelId,
          timelockUntil: event.timelockUntil === undefined || event.timelockUntil === null
            ? event.timelockUntil
            : Schemas.toTimestamp(event.timelockUntil),
          newChatQuota: q === undefined
            ? undefined
            : {
              total: q.total,
              used: q.used,
              cycleEndsAt: q.cycleEndsAt === null ? null : Schemas.toTimestamp(q.cycleEndsAt)
            },
          signal: event.signal === undefined
            ? undefined
            : { reason: event.signal, at: Schemas.toTimestamp(event.at ?? (yield* Clock.currentTimeMillis)) },
          now: Schemas.toTimestamp(yield* Clock.currentTimeMillis)
        })
      }))
    )

    /** The group chats the number is in (`GroupChatsSync`), kept in order with status changes. */
    const onGroupChats = perEntity((channel: Messaging.Channel) => (event: ChannelProvider.GroupChatsReported) =>
      kept("group chats")(groupChats.record({
        workspaceId: channel.workspace_id,
        channelId: channel.id,
        groupChats: event.groupChats,
        left: event.left,
        complete: event.complete,
        now: Schemas.toTimestamp(event.at)
      }))
    )

    /** Keeps WhatsApp's answer to a recipient check, for the channel and on the contact. */
    const onRecipientChecked = perEntity((event: ChannelProvider.RecipientChecked) =>
      kept("recipient check")(recipientChecks.record({
        channelId,
        phone: event.phoneNumber,
        onWhatsApp: event.onWhatsApp,
        at: Schemas.toTimestamp(event.at)
      }))
    )

    return { onStatusChanged, onRestriction, onLidMapped, onGroupChats, onRecipientChecked }
  })
