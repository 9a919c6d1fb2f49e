/**
 * The call policy of a QR channel (docs/QR-CHANNELS.md "Calls"): when someone calls and the
 * channel's policy rejects calls, the call is rejected at once through the link, recorded as a
 * `rejected` call message, and the policy's `reply_text` (if any) is queued to the caller as a
 * normal outbound text: the channel's queue paces it, and it counts against the QR daily cap (a
 * reply beyond the cap is skipped, counted and logged). The reply is queued in the transaction that
 * records the call, only when the call's message is new: a repeated offer of the same call is
 * rejected again but answered once, and a database failure leaves both or neither (the Channel
 * entity retries the offer until Postgres takes it, `ChannelConnection`).
 * Without a rejecting policy nothing happens here: the call's outcome arrives later as an inbound
 * `call` message (`QrCalls`).
 */
import { ChannelsRepo, QrSafetyRepo, SendWritesRepo } from "@switchboard/db"
import { Ids, LidAddress, MessageCategory, Messaging, QrSafetyWindow, Schemas } from "@switchboard/domain"
import { CallMetrics, type ChannelProvider } from "@switchboard/providers"
import { Clock, Effect, Option } from "effect"
import { InboundMessages } from "./InboundMessages.js"

export class InboundCalls extends Effect.Service<InboundCalls>()("@switchboard/entities/InboundCalls", {
  effect: Effect.gen(function*() {
    const channels = yield* ChannelsRepo.ChannelsRepo
    const inbound = yield* InboundMessages
    const safety = yield* QrSafetyRepo.QrSafetyRepo
    const sendWrites = yield* SendWritesRepo.SendWritesRepo

    /**
     * Queues `text` to the caller of a call just written, within the QR daily cap: inside the
     * call's own transaction, after the channel's row lock (taken first, as any send takes it).
     * How it went: `queued`, or why not.
     */
    const writeReply = (channel: Messaging.Channel, call: Messaging.Message, text: string) =>
      Effect.gen(function*() {
        const to = call.from ?? (call.sender?.whatsapp_lid ? LidAddress.lidAddress(call.sender.whatsapp_lid) : null)
        if (to === null) return "no_address" as const
        const now = yield* Clock.currentTimeMillis
        const limit = QrSafetyWindow.effectiveDailyCap(yield* safety.overrides(channel.workspace_id, channel.id))
        const usage = yield* safety.usage(channel.id, Schemas.toTimestamp(now - QrSafetyWindow.QR_DAILY_WINDOW_MS))
        const decision = QrSafetyWindow.decideDaily({ now, limit, sentAt: usage.sentAt, queued: usage.queued })
        if (decision._tag !== "Allowed") return "daily_cap" as const
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
        return result._tag === "Written" ? "queued" as const : "daily_cap" as const
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
      const replyText = policy.reply_text
      let reply: "queued" | "no_address" | "daily_cap" | undefined
      // the call and its reply in one transaction: a database failure between the two cannot
      // leave a recorded call unanswered (a retry of a recorded call is a repeat: never answered)
      const recorded = yield* inbound.record(
        {
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
        },
        replyText === null ? undefined : {
          first: safety.lockChannel(channel.id),
          then: (message) =>
            Effect.map(writeReply(channel, message, replyText), (outcome) => {
              reply = outcome
            })
        }
      )
      if (Option.isNone(recorded) || reply === undefined) return
      if (reply === "queued") {
        yield* CallMetrics.countReply("queued")
        yield* input.wake
        return
      }
      yield* CallMetrics.countReply("skipped", reply)
      if (reply === "daily_cap") {
        yield* Effect.logWarning("call policy reply skipped: the QR daily cap is reached").pipe(
          Effect.annotateLogs({ channel_id: channel.id, message_id: recorded.value.id })
        )
      }
    })

    return { offered } as const
  }),
  dependencies: [
    ChannelsRepo.ChannelsRepo.Default,
    QrSafetyRepo.QrSafetyRepo.Default,
    SendWritesRepo.SendWritesRepo.Default,
    InboundMessages.Default
  ]
}) {}
