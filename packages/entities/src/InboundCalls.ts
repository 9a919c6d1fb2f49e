/**
 * The call policy of a QR channel (docs/QR-CHANNELS.md "Calls"): when someone calls and the
 * channel's policy rejects calls, the call is rejected at once through the link, recorded as a
 * `rejected` call message, and the policy's `reply_text` (if any) is queued to the caller as a
 * normal outbound text: the channel's queue paces it, and it counts against the QR daily cap (a
 * reply beyond the cap is skipped, counted and logged). The reply is queued only when the call's
 * message is new, so a repeated offer of the same call is rejected again but answered once.
 * Without a rejecting policy nothing happens here: the call's outcome arrives later as an inbound
 * `call` message (`QrCalls`).
 */
import { ChannelsRepo, QrSafetyRepo, SendWritesRepo, Transactions } from "@switchboard/db"
import { Ids, LidAddress, MessageCategory, Messaging, QrSafetyWindow, Schemas } from "@switchboard/domain"
import { CallMetrics, type ChannelProvider } from "@switchboard/providers"
import { Clock, Effect, Option } from "effect"
import { InboundMessages } from "./InboundMessages.js"

export class InboundCalls extends Effect.Service<InboundCalls>()("@switchboard/entities/InboundCalls", {
  effect: Effect.gen(function*() {
    const channels = yield* ChannelsRepo.ChannelsRepo
    const inbound = yield* InboundMessages
    const transactions = yield* Transactions.Transactions
    const safety = yield* QrSafetyRepo.QrSafetyRepo
    const sendWrites = yield* SendWritesRepo.SendWritesRepo

    /**
     * Queues `text` to the caller of a recorded call, within the QR daily cap (under the channel's
     * row lock, like any send). Whether it was queued.
     */
    const queueReply = Effect.fn("InboundCalls.queueReply")(function*(
      channel: Messaging.Channel,
      call: Messaging.Message,
      text: string
    ) {
      const to = call.from ?? (call.sender?.whatsapp_lid ? LidAddress.lidAddress(call.sender.whatsapp_lid) : null)
      if (to === null) {
        yield* CallMetrics.countReply("skipped", "no_address")
        return false
      }
      const written = yield* transactions.run(Effect.gen(function*() {
        yield* safety.lockChannel(channel.id)
        const now = yield* Clock.currentTimeMillis
        const limit = QrSafetyWindow.effectiveDailyCap(yield* safety.overrides(channel.workspace_id, channel.id))
        const usage = yield* safety.usage(channel.id, Schemas.toTimestamp(now - QrSafetyWindow.QR_DAILY_WINDOW_MS))
        const decision = QrSafetyWindow.decideDaily({ now, limit, sentAt: usage.sentAt, queued: usage.queued })
        if (decision._tag !== "Allowed") return false
        const at = Schemas.toTimestamp(now)
        const category = MessageCategory.DEFAULT_CATEGORY
        const message = new Messaging.Message({
          id: yield* Ids.newId("msg"),
          object: "message",
          workspace_id: channel.workspace_id,
          channel_id: channel.id,
          conversation_id: call.conversation_id,
          contact_id: call.contact_id,
          direction: "outbound",
          from: channel.phone_number ?? null,
          to,
          type: "text",
          text: { body: text },
          template: null,
          category,
          status: "queued",
          failure: null,
          // which call it answers: one reply per call
          metadata: { call_message_id: call.id },
          created_at: at,
          updated_at: at,
          sent_at: null,
          delivered_at: null,
          read_at: null,
          context: { reply_to: null },
          sender: null,
          media: null
        })
        const result = yield* sendWrites.write({
          message,
          priority: MessageCategory.PRIORITY[category],
          contactsLimit: null,
          claim: undefined
        })
        return result._tag === "Written"
      }))
      yield* written ? CallMetrics.countReply("queued") : CallMetrics.countReply("skipped", "daily_cap")
      if (!written) {
        yield* Effect.logWarning("call policy reply skipped: the QR daily cap is reached").pipe(
          Effect.annotateLogs({ channel_id: channel.id, message_id: call.id })
        )
      }
      return written
    })

    /**
     * A call offer on `channelId`'s connection: rejected and recorded when the channel's policy says
     * so (the reply queued for a new record; `wake` then tells the dispatch loop). Failures to
     * reject leave the call ringing: its outcome is recorded when it ends.
     */
    const offered = Effect.fn("InboundCalls.offered")(function*(input: {
      readonly channelId: string
      readonly connection: ChannelProvider.ChannelConnection
      readonly channelNumber: string | null
      readonly call: ChannelProvider.CallOffered
      readonly wake: Effect.Effect<void>
    }) {
      const { call, connection } = input
      const found = yield* channels.findById(input.channelId)
      if (Option.isNone(found)) return
      const channel = found.value.channel
      const policy = channel.call_policy
      if (!policy.reject || connection.rejectCall === undefined) return
      const rejected = yield* connection.rejectCall(call).pipe(
        Effect.as(true),
        Effect.catchAll((e) =>
          Effect.as(
            Effect.logWarning("call not rejected: it rings on").pipe(
              Effect.annotateLogs({ channel_id: channel.id, reason: e.reason })
            ),
            false
          )
        )
      )
      if (!rejected) return
      const recorded = yield* inbound.record({
        workspaceId: channel.workspace_id,
        channelId: channel.id,
        channelNumber: input.channelNumber ?? channel.phone_number,
        content: {
          providerMessageId: call.providerMessageId,
          sender: call.sender,
          body: { _tag: "call", video: call.video, status: "rejected", durationS: null },
          quotedProviderMessageId: null,
          at: call.at
        },
        now: Schemas.toTimestamp(call.at)
      })
      if (Option.isNone(recorded) || policy.reply_text === null) return
      if (yield* queueReply(channel, recorded.value, policy.reply_text)) yield* input.wake
    })

    return { offered } as const
  }),
  dependencies: [
    ChannelsRepo.ChannelsRepo.Default,
    Transactions.Transactions.Default,
    QrSafetyRepo.QrSafetyRepo.Default,
    SendWritesRepo.SendWritesRepo.Default,
    InboundMessages.Default
  ]
}) {}
