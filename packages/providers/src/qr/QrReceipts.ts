/**
 * Receipts and acks: WhatsApp's word on our messages (its ack, delivery and read receipts, an ack
 * that refuses a message) turned into `receipt` and `rejected` events, each reported once; and our
 * read receipts (blue ticks) for inbound messages.
 */
import { type ChannelStateMachine, GroupChats } from "@switchboard/domain"
import { type BinaryNode, proto, type WAMessageUpdate } from "baileys"
import { Clock, Duration, Effect, Option, Schema } from "effect"
import type { InboundRef } from "../ChannelProvider.js"
import type { QrConnectionEvent, QrReceiptEvent } from "./QrConnectionEvent.js"
import { readerJid } from "./QrJid.js"
import * as QrProtectionMetrics from "./QrProtectionMetrics.js"
import { classifyAckError } from "./QrRestrictions.js"
import { QrNotConnected, QrSendFailed } from "./QrSendError.js"
import type { QrLink } from "./QrSocket.js"

/** A message's status as Baileys reports it (`proto.WebMessageInfo.Status`). */
export interface RawReceipt {
  readonly id: string
  readonly status: number
}

const MessageUpdate = Schema.Struct({
  key: Schema.Struct({ id: Schema.String, fromMe: Schema.optional(Schema.NullOr(Schema.Boolean)) }),
  update: Schema.Struct({ status: Schema.optional(Schema.NullOr(Schema.Number)) })
})
const decodeUpdate = Schema.decodeUnknownOption(MessageUpdate)

const Status = proto.WebMessageInfo.Status
const receiptStatus = (status: number): QrReceiptEvent["status"] | undefined =>
  status === Status.SERVER_ACK
    ? "sent"
    : status === Status.DELIVERY_ACK
    ? "delivered"
    : status === Status.READ || status === Status.PLAYED
    ? "read"
    : undefined

/** The statuses of our own messages in a `messages.update` batch. */
export const receiptsOf = (updates: ReadonlyArray<WAMessageUpdate>): ReadonlyArray<RawReceipt> => {
  const items: Array<RawReceipt> = []
  for (const u of updates) {
    const decoded = decodeUpdate(u)
    if (Option.isSome(decoded) && decoded.value.key.fromMe && typeof decoded.value.update.status === "number") {
      items.push({ id: decoded.value.key.id, status: decoded.value.update.status })
    }
  }
  return items
}

/**
 * Receipts of our messages in group chats (Baileys' `message-receipt.update`: one per participant
 * and message): each participant's delivered or read receipt, which `report` takes once per status,
 * so the first participant's receipt moves the message (docs/API.md "Group chats").
 */
export const groupReceiptsOf = (
  updates: ReadonlyArray<
    { readonly key: { readonly id?: string | null; readonly fromMe?: boolean | null }; readonly receipt: object }
  >
): ReadonlyArray<RawReceipt> =>
  updates.flatMap(({ key, receipt }) => {
    if (key.fromMe !== true || typeof key.id !== "string") return []
    // Baileys' event buffer may fold a participant's delivered and read receipts into one update
    const read = "readTimestamp" in receipt && receipt.readTimestamp != null
    const delivered = "receiptTimestamp" in receipt && receipt.receiptTimestamp != null
    return [
      ...(delivered ? [{ id: key.id, status: Status.DELIVERY_ACK }] : []),
      ...(read ? [{ id: key.id, status: Status.READ }] : [])
    ]
  })

/**
 * WhatsApp's ack of our message = `sent`; an ack with an error is WhatsApp refusing it (Baileys
 * only logs that and marks it ERROR): the message fails (`QrRestrictions`).
 */
export const ackOf = (
  node: BinaryNode
):
  | { readonly _tag: "Accepted"; readonly receipt: RawReceipt }
  | { readonly _tag: "Refused"; readonly id: string; readonly error: string }
  | undefined =>
{
  const id = node.attrs["id"]
  const error = node.attrs["error"]
  if (!id) return undefined
  return error === undefined
    ? { _tag: "Accepted", receipt: { id, status: Status.SERVER_ACK } }
    : { _tag: "Refused", id, error }
}

/**
 * A read (or played) receipt implies the delivery before it: the receipts as reported, each read
 * preceded by its message's `delivered`. WhatsApp sends both, but Baileys' event buffer folds a
 * delivery and a read that it handles together into one `messages.update` carrying only the read
 * (seen in `test/qr/QrConnection.test.ts` at load); the message still goes sent, delivered, read,
 * as a group participant's folded receipts do (`groupReceiptsOf`).
 */
export const withImpliedDelivery = (items: ReadonlyArray<RawReceipt>): ReadonlyArray<RawReceipt> =>
  items.flatMap((item) =>
    item.status === Status.READ || item.status === Status.PLAYED
      ? [{ id: item.id, status: Status.DELIVERY_ACK }, item]
      : [item]
  )

/** Reports receipts and refusals of one connection, each once (both Baileys events can carry the same one). */
export const make = (options: {
  readonly channelId: string
  readonly annotations: Record<string, string>
  readonly publish: (event: QrConnectionEvent) => Effect.Effect<boolean>
  /** a restriction that a refusal shows on the channel (`QrSignals`) */
  readonly restricted: (reason: ChannelStateMachine.QrRestrictionReason) => Effect.Effect<void>
}) => {
  const { annotations, channelId, publish } = options
  /** receipts already reported */
  const reported = new Set<string>()

  const report = (items: ReadonlyArray<RawReceipt>, at: number) =>
    Effect.forEach(withImpliedDelivery(items), (item) => {
      const status = receiptStatus(item.status)
      const key = `${item.id}:${status}`
      if (status === undefined || reported.has(key)) return Effect.void
      if (reported.size > 10_000) reported.clear()
      reported.add(key)
      return publish({ _tag: "receipt", channelId, messageId: item.id, status, at })
    }, { discard: true })

  /** WhatsApp refused one of our messages: it fails, and a restriction shows on the channel. */
  const rejected = (id: string, error: string) =>
    Effect.gen(function*() {
      const rejection = classifyAckError(error)
      const key = `${id}:rejected`
      if (reported.has(key)) return
      reported.add(key)
      yield* Effect.logWarning("qr message refused by WhatsApp").pipe(
        Effect.annotateLogs({ ...annotations, message_id: id, error_code: error, failure_code: rejection.code })
      )
      yield* publish({
        _tag: "rejected",
        channelId,
        messageId: id,
        code: rejection.code,
        reason: rejection.reason,
        retryable: rejection.retryable,
        at: yield* Clock.currentTimeMillis
      })
      yield* QrProtectionMetrics.refused(rejection.code)
      if (rejection.channelReason !== null) yield* options.restricted(rejection.channelReason)
    })

  return { report, rejected } as const
}

/**
 * Read receipts (blue ticks) for inbound messages, each to its sender's chat (`readerJid`);
 * succeeds once Baileys wrote them to WhatsApp.
 */
export const markRead = (options: {
  readonly channelId: string
  readonly link: () => QrLink
  readonly queryTimeout: Duration.Duration
}) =>
(messages: ReadonlyArray<InboundRef>) =>
  Effect.suspend((): Effect.Effect<void, QrNotConnected | QrSendFailed> => {
    const { channelId } = options
    const keys = messages.flatMap((m) => {
      const sender = readerJid(m)
      if (sender === undefined) return []
      // a group chat's message: the receipt goes to the group, naming the participant who wrote
      return m.whatsappGroupId === undefined
        ? [{ remoteJid: sender, id: m.providerMessageId, fromMe: false }]
        : [{
          remoteJid: GroupChats.groupChatAddress(m.whatsappGroupId),
          id: m.providerMessageId,
          fromMe: false,
          participant: sender
        }]
    })
    if (keys.length === 0) return Effect.void
    const { socket: s, status } = options.link()
    if (!s) return Effect.fail(new QrNotConnected({ channelId, status }))
    const failed = (reason: string) => new QrSendFailed({ channelId, messageId: keys[0]!.id, reason })
    // one receipt per chat, its ids listed (Baileys groups the keys)
    return Effect.tryPromise({
      try: () => s.readMessages(keys),
      catch: (error) => failed(error instanceof Error ? error.message : String(error))
    }).pipe(
      Effect.timeoutFail({ duration: Duration.times(options.queryTimeout, 2), onTimeout: () => failed("timed out") })
    )
  }).pipe(
    Effect.withSpan("QrConnection.markRead", {
      attributes: { channel_id: options.channelId, messages: messages.length }
    })
  )
