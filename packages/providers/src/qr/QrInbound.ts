/**
 * What a live QR connection hears from others: the messages Baileys hands over
 * (`messages.upsert`) and the LID mappings it learns, as `inbound` and `lid_mapping` events.
 * Translating one message is `BaileysInbound`'s job; this module reports, counts and logs.
 *
 * A sender WhatsApp names by LID alone is looked up in the link's own LID store before it is
 * reported (`lidPhone`: Baileys' `signalRepository.lidMapping`, read through the channel's key
 * store, where the LIDs of the numbers we sent to, and those WhatsApp revealed, are kept), so a
 * contact who answers our message by LID lands on the number's contact, not a second one.
 */
import type { MessageContent } from "@switchboard/domain"
import type { WAMessage } from "baileys"
import { Clock, Effect } from "effect"
import * as InboundMetrics from "../InboundMetrics.js"
import { fromBaileys, type IgnoredReason } from "./BaileysInbound.js"
import type { QrConnectionEvent } from "./QrConnectionEvent.js"
import { groupReceiptsOf, type RawReceipt } from "./QrReceipts.js"

/** What is ignored on purpose every day (logged at debug level; counted like the rest). */
const ROUTINE_IGNORED: ReadonlySet<IgnoredReason> = new Set([
  "group_update",
  "status_broadcast",
  "broadcast",
  "newsletter"
])

export const make = (options: {
  readonly channelId: string
  readonly annotations: Record<string, string>
  readonly publish: (event: QrConnectionEvent) => Effect.Effect<boolean>
  /** a receipt folded into our own message's upsert (`QrReceipts`) */
  readonly receipts: (items: ReadonlyArray<RawReceipt>, at: number) => Effect.Effect<void>
  /** the phone number (E.164) the link's LID store holds for a LID (without server), if any */
  readonly lidPhone: (whatsappLid: string) => Effect.Effect<string | null>
}) => {
  const { annotations, channelId, publish } = options
  /** LID mappings reported on this connection (each is reported once per connection) */
  const mapped = new Set<string>()

  const mapping = (whatsappLid: string | null, phoneNumber: string | null) =>
    Effect.suspend(() => {
      if (whatsappLid === null || phoneNumber === null) return Effect.void
      const key = `${whatsappLid}:${phoneNumber}`
      if (mapped.has(key)) return Effect.void
      if (mapped.size > 10_000) mapped.clear()
      mapped.add(key)
      return publish({ _tag: "lid_mapping", channelId, whatsappLid, phoneNumber })
    })

  /** A LID-only sender completed with the number the LID store knows (never fails: unknown stays LID-only). */
  const withKnownNumber = (content: MessageContent.InboundContent) =>
    Effect.gen(function*() {
      const { phoneNumber, whatsappLid } = content.sender
      if (phoneNumber !== null || whatsappLid === null) return content
      const known = yield* options.lidPhone(whatsappLid)
      return known === null ? content : { ...content, sender: { phoneNumber: known, whatsappLid } }
    })

  const upsert = (messages: ReadonlyArray<WAMessage>) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      for (const m of messages) {
        if (typeof m?.key?.id !== "string") {
          // without WhatsApp's id it can be neither recorded once nor told apart: counted and logged
          yield* InboundMetrics.countInbound("unsupported", "ignored", "no_id")
          yield* Effect.logWarning("qr inbound message without an id ignored").pipe(Effect.annotateLogs(annotations))
          continue
        }
        if (m.key.fromMe === true) {
          // ours (or sent from the phone): not inbound. A receipt that came while our own upsert
          // was buffered is folded into it (a group participant's in `userReceipt`).
          if (typeof m.status === "number") yield* options.receipts([{ id: m.key.id, status: m.status }], now)
          // in a group chat, the participants' receipts are folded in as `userReceipt`
          const folded = groupReceiptsOf((m.userReceipt ?? []).map((receipt) => ({ key: m.key, receipt })))
          if (folded.length > 0) yield* options.receipts(folded, now)
          continue
        }
        const translated = fromBaileys(m, now)
        if (translated._tag === "ignored") {
          yield* InboundMetrics.countInbound(translated.type, "ignored", translated.reason)
          // group notices and status posts are routine on any busy number: their lines are debug
          const log = ROUTINE_IGNORED.has(translated.reason) ? Effect.logDebug : Effect.logInfo
          yield* log("qr inbound message ignored").pipe(Effect.annotateLogs({
            ...annotations,
            reason: translated.reason,
            provider_message_id: translated.providerMessageId,
            kind: translated.kind ?? "none",
            sender: translated.sender ?? "none"
          }))
          continue
        }
        if (translated.oddMediaType === true) {
          // provider input is never refused: the file is kept under the type as read; the text
          // itself is not logged (it may carry control characters)
          yield* Effect.logWarning("qr inbound media type read leniently").pipe(Effect.annotateLogs({
            ...annotations,
            provider_message_id: translated.content.providerMessageId,
            kind: translated.kind
          }))
        }
        const content = yield* withKnownNumber(translated.content)
        // a message that names both forms of its sender reveals the mapping
        yield* mapping(content.sender.whatsappLid, content.sender.phoneNumber)
        yield* publish({ _tag: "inbound", channelId, content })
      }
    })

  return { upsert, mapping } as const
}
