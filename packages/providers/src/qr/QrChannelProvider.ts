/**
 * The QR provider behind the `ChannelProvider` interface the Channel entity uses: one
 * `QrConnection` per channel, for as long as the entity's connection scope. On connect it resumes
 * a stored link (a runner restart or a failover keeps the link); a channel that
 * was pairing when its previous owner went away becomes `disconnected` (`pairing_interrupted`).
 *
 * - `send` uses our message id as the WhatsApp id; not connected or a Baileys failure is a
 *   retryable refusal (the message was not accepted and goes back to the queue with backoff); a
 *   number not on WhatsApp fails for good (`not_on_whatsapp`).
 * - `markRead`: read receipts (blue ticks) through the open link; without one, or when Baileys
 *   fails, none are sent and none later (logged): the messages stay read on our side.
 * - `rejectCall`: rejects a ringing call through the open link (the call policy, `QrCalls`).
 * - `events`: receipts, inbound messages of every kind, call offers, LID mappings and status changes, in the
 *   order the connection reports them. QR codes, expiry and connection errors only go to pairing watchers (`pairing.subscribe`),
 *   never here.
 */
import { Effect, Option, Stream } from "effect"
import type { ChannelConnection, ChannelProvider, ProviderEvent } from "../ChannelProvider.js"
import { accepted, CallRejectFailed, qrSendRefusal, refused } from "../ChannelProvider.js"
import type { QrConnectionEvent } from "./QrConnectionEvent.js"
import { QrProvider } from "./QrProvider.js"
import { NOT_ON_WHATSAPP } from "./QrRestrictions.js"

const toProviderEvent = (event: QrConnectionEvent): ProviderEvent | undefined => {
  switch (event._tag) {
    case "receipt":
      return { _tag: "Receipt", messageId: event.messageId, status: event.status, at: event.at }
    case "rejected":
      return {
        _tag: "SendRejected",
        messageId: event.messageId,
        code: event.code,
        reason: event.reason,
        retryable: event.retryable
      }
    case "restriction":
      return {
        _tag: "RestrictionReported",
        timelockUntil: event.timelockUntil,
        newChatQuota: event.newChatQuota,
        signal: event.signal,
        at: event.at
      }
    case "recipient_checked":
      return { _tag: "RecipientChecked", phoneNumber: event.phoneNumber, onWhatsApp: event.onWhatsApp, at: event.at }
    case "inbound":
      return { _tag: "Inbound", ...event.content }
    case "group_chats":
      return {
        _tag: "GroupChatsReported",
        groupChats: event.groupChats,
        left: event.left,
        complete: event.complete,
        at: event.at
      }
    case "call_offer":
      return {
        _tag: "CallOffered",
        providerMessageId: event.callId,
        callerAddress: event.callerJid,
        sender: event.sender,
        video: event.video,
        at: event.at
      }
    case "lid_mapping":
      return { _tag: "LidMapped", lid: event.whatsappLid, phoneNumber: event.phoneNumber }
    case "state":
      return {
        _tag: "StatusChanged",
        from: event.from,
        to: event.to,
        reason: event.reason,
        requiresRepair: event.requiresRepair,
        phoneNumber: event.phoneNumber
      }
    case "qr":
    case "expired":
    case "connection_error":
      return undefined
  }
}

export const make = Effect.map(QrProvider, (qr): ChannelProvider => ({
  forget: (channel) => qr.forget(channel.id),
  downloadMedia: qr.downloadMedia,
  connect: (channel) =>
    Effect.gen(function*() {
      const connection = yield* qr.connect({ channelId: channel.id, initialStatus: channel.status })
      // subscribed before anything can happen, so no status change is missed
      const reported = yield* connection.subscribe
      yield* connection.resume
      return {
        capabilities: qr.capabilities,
        send: (message) =>
          Effect.gen(function*() {
            const content = message.content
            if (content?._tag !== "media") return undefined
            const file = yield* qr.readMedia(content.mediaId)
            return Option.isNone(file)
              ? refused(false, "media_unavailable", "The file is no longer stored")
              : file.value
          }).pipe(Effect.flatMap((file) =>
            file !== undefined && "_tag" in file
              ? Effect.succeed(file)
              : connection.send({
                messageId: message.id,
                to: message.to,
                text: message.body,
                content: message.content,
                quoted: message.quoted,
                file
              }).pipe(
                Effect.as(accepted),
                Effect.catchTags({
                  QrNotConnected: (e) =>
                    Effect.succeed(refused(true, "channel_not_connected", `The channel is ${e.status}, not connected`)),
                  QrSendFailed: (e) => Effect.succeed(qrSendRefusal(e.reason)),
                  QrRecipientNotOnWhatsApp: () =>
                    Effect.succeed(
                      refused(
                        false,
                        NOT_ON_WHATSAPP,
                        "This number is not on WhatsApp; nothing was sent (a retry cannot help)"
                      )
                    )
                })
              )
          )),
        markRead: (messages) =>
          connection.markRead(messages).pipe(
            Effect.catchAll((e) =>
              Effect.logWarning("qr read receipts not sent").pipe(Effect.annotateLogs({
                channel_id: channel.id,
                messages: messages.length,
                reason: e._tag === "QrNotConnected" ? `channel ${e.status}` : e.reason
              }))
            )
          ),
        rejectCall: (call) =>
          connection.rejectCall(call.providerMessageId, call.callerAddress).pipe(
            Effect.mapError((e) =>
              new CallRejectFailed({ reason: e._tag === "QrNotConnected" ? `channel ${e.status}` : e.reason })
            )
          ),
        events: Stream.fromQueue(reported).pipe(Stream.filterMap((e) => Option.fromNullable(toProviderEvent(e)))),
        // receipts come over the live link; the owner stays alive while the link is held
        pendingReceipts: Effect.succeed(0),
        holdInput: connection.holdInput,
        resumeInput: connection.resumeInput,
        pairing: {
          snapshot: connection.snapshot,
          subscribe: connection.subscribe,
          start: connection.start,
          startWithCode: connection.startWithCode,
          logout: connection.logout
        }
      } satisfies ChannelConnection
    })
}))
