/**
 * The simulated network behind sandbox channels (DECISIONS 6): accepts what the channel
 * dispatches (the channel paces it at 2 msg/s), reports sent, delivered and read after small
 * delays, and honours the magic recipients. A message id is accepted once, durably: dispatching
 * it again (after a crash or a failover) never delivers it twice.
 */
import { MessagesRepo } from "@switchboard/db"
import { THROUGHPUT_MPS } from "@switchboard/domain"
import { Effect, Queue, Stream } from "effect"
import type { ChannelProvider, Receipt, SendResult } from "./ChannelProvider.js"
import { ProvidersConfig } from "./ProvidersConfig.js"

export const MAGIC = {
  failsPermanently: "+15005550001",
  failsTwiceThenSucceeds: "+15005550002",
  staysAtSent: "+15005550003"
} as const

export const isMagicNumber = (phone: string) => (Object.values(MAGIC) as Array<string>).includes(phone)

export class SandboxProvider extends Effect.Service<SandboxProvider>()("@switchboard/providers/SandboxProvider", {
  effect: Effect.gen(function*() {
    const messages = yield* MessagesRepo
    const config = yield* ProvidersConfig
    const [sentMs, deliveredMs, readMs] = config.sandboxReceiptDelaysMs

    const provider: ChannelProvider = {
      connect: (channel) =>
        Effect.gen(function*() {
          const scope = yield* Effect.scope
          const receipts = yield* Queue.unbounded<Receipt>()
          yield* Effect.addFinalizer(() => Queue.shutdown(receipts))

          /** Reports the receipts still due after `from` (the network keeps reporting across our restarts). */
          const report = (messageId: string, to: string, from: "accepted" | "sent" | "delivered" = "accepted") =>
            Effect.gen(function*() {
              if (from === "accepted") {
                yield* Effect.sleep(sentMs)
                yield* Queue.offer(receipts, { messageId, status: "sent" })
              }
              if (to === MAGIC.staysAtSent) return
              if (from !== "delivered") {
                yield* Effect.sleep(deliveredMs - sentMs)
                yield* Queue.offer(receipts, { messageId, status: "delivered" })
              }
              yield* Effect.sleep(readMs - deliveredMs)
              yield* Queue.offer(receipts, { messageId, status: "read" })
            })

          // messages this channel had accepted before a restart or a failover still get their receipts
          for (const m of yield* messages.awaitingReceipts(channel.id)) {
            const from = m.status === "provider_accepted" ? "accepted" : m.status === "sent" ? "sent" : "delivered"
            yield* Effect.forkIn(report(m.id, m.to_number, from), scope)
          }

          const send = (message: { readonly id: string; readonly to: string; readonly attempts: number }) =>
            Effect.gen(function*() {
              if (message.to === MAGIC.failsPermanently) {
                return {
                  _tag: "Failed",
                  retryable: false,
                  code: "recipient_unreachable",
                  reason: "The recipient cannot receive messages"
                } as SendResult
              }
              if (message.to === MAGIC.failsTwiceThenSucceeds && message.attempts < 2) {
                return {
                  _tag: "Failed",
                  retryable: true,
                  code: "network_timeout",
                  reason: "The network did not answer in time"
                } as SendResult
              }
              // durable de-duplication: the same id is delivered to the handset once; a repeated
              // dispatch (after a crash) only hears the receipts again, which never move a message back
              yield* messages.claimSandboxDelivery(message.id)
              yield* Effect.forkIn(report(message.id, message.to), scope)
              return { _tag: "Accepted" } as SendResult
            })

          return {
            send: (message) => send(message),
            receipts: Stream.fromQueue(receipts),
            capabilities: { max_throughput_mps: THROUGHPUT_MPS.sandbox, message_types: ["text"] }
          }
        })
    }
    return provider
  }),
  dependencies: [MessagesRepo.Default]
}) {}
