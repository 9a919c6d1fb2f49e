/**
 * The simulated network behind sandbox channels, a real provider behind the same
 * interface the QR provider implements:
 * - accepts at most 2 messages per second per channel (a token bucket; beyond it a retryable
 *   `PROVIDER_RATE_LIMITED` refusal; the Channel entity's own pacing never gets there);
 * - reports `sent`, `delivered` and `read` after small delays (`sandboxReceiptDelaysMs`), their
 *   times fixed when it accepts the message (one statement per dispatch, shared by the runner's
 *   channels' dispatches within `GroupCommit.DispatchWindow`; none per receipt);
 * - honours the magic recipients: `+15005550001` fails permanently, `+15005550002` fails
 *   retryably on its first two offers then succeeds, `+15005550003` stays at `sent`;
 * - remembers every message id durably (`SandboxNetworkRepo`): a message offered twice (a
 *   duplicate dispatch, a failover) is accepted and delivered once, and a channel that
 *   reconnects hears the receipts of what is still under way (receipts may repeat, as on a real
 *   network; a guarded move ignores what does not move a message forward), so an idle
 *   channel's connection may be closed and opened again on its next work (`dropWhenIdle`);
 * - simulates inbound messages of every kind (`simulateInbound`); a simulated file's bytes come
 *   with it (`SandboxMediaSource`) and `downloadMedia` hands them to the media worker like a real
 *   provider's media host would.
 */
import { DatabaseUnavailable, GroupCommit, MediaRepo, MediaStore, SandboxNetworkRepo } from "@switchboard/db"
import { Messaging, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option, Queue, Random, Ref, Schema, Stream } from "effect"
import type {
  ChannelConnection,
  ChannelProvider,
  OutgoingMessage,
  ProviderEvent,
  SimulatedInbound
} from "./ChannelProvider.js"
import { accepted, MediaDownloadFailed, PROVIDER_RATE_LIMITED, receipt, refused } from "./ChannelProvider.js"
import { ProvidersConfig } from "./ProvidersConfig.js"
import { MAGIC } from "./SandboxNumbers.js"

/**
 * A reconnecting channel hears again the receipts of messages accepted this recently (a failover
 * takes seconds); receipts lost longer ago are the message sweeper's to repair, from the times
 * this network stored.
 */
const REPLAY_WINDOW_MS = 120 * 1000

/** The `source` of a simulated inbound file: inline bytes or a stored media of the workspace. */
export const SandboxMediaSource = Schema.Union(
  Schema.Struct({ data_base64: Schema.String }),
  Schema.Struct({ media_id: Schema.String })
)

const STAGES: ReadonlyArray<SandboxNetworkRepo.NetworkStage> = ["sent", "delivered", "read"]

const stageTime = (delivery: SandboxNetworkRepo.NetworkDelivery, stage: SandboxNetworkRepo.NetworkStage) =>
  stage === "sent" ? delivery.sentAt : stage === "delivered" ? delivery.deliveredAt : delivery.readAt

/** Offers in one statement at most. */
const MAX_OFFER_BATCH = 500

export class SandboxProvider extends Effect.Service<SandboxProvider>()("@switchboard/providers/SandboxProvider", {
  scoped: Effect.gen(function*() {
    const network = yield* SandboxNetworkRepo.SandboxNetworkRepo
    // the offers of all the runner's sandbox channels made within the dispatch window go as one
    // statement (one statement per dispatched message was the runner's largest cost left:
    // bench/RESULTS.md 3, "The network's offers shared")
    const offer: (
      offer: SandboxNetworkRepo.Offer
    ) => Effect.Effect<Option.Option<SandboxNetworkRepo.NetworkDelivery>, DatabaseUnavailable.DatabaseUnavailable> =
      yield* GroupCommit.make(network.offers, MAX_OFFER_BATCH, yield* GroupCommit.DispatchWindow)
    const mediaRepo = yield* MediaRepo.MediaRepo
    const store = yield* MediaStore.MediaStore
    const config = yield* ProvidersConfig
    const delays = config.sandboxReceiptDelaysMs
    const mps = Messaging.THROUGHPUT_MPS.sandbox

    // the connection's interface declares no database failure: a passing one is a defect for the
    // channel's loop, as before
    const connect: ChannelProvider["connect"] = (channel) =>
      DatabaseUnavailable.dieWhenUnavailable(Effect.gen(function*() {
        const scope = yield* Effect.scope
        const events = yield* Queue.unbounded<ProviderEvent>()
        yield* Effect.addFinalizer(() => Queue.shutdown(events))
        const reporting = new Set<string>()
        const pending = yield* Ref.make(0)
        // token bucket of the network: `mps` tokens, refilled at `mps` per second
        const bucket = { tokens: mps, at: yield* Clock.currentTimeMillis }

        const takeToken = Effect.map(Clock.currentTimeMillis, (now) => {
          bucket.tokens = Math.min(mps, bucket.tokens + ((now - bucket.at) / 1000) * mps)
          bucket.at = now
          if (bucket.tokens < 1) return false
          bucket.tokens -= 1
          return true
        })

        /**
         * Reports the receipts of an accepted message, each at the time its acceptance fixed (a
         * row accepted before those times were stored: acceptance + the delay): at once when it
         * has passed (a repeat, or one a connection that went away did not get to tell).
         */
        const report = (delivery: SandboxNetworkRepo.NetworkDelivery) => {
          if (reporting.has(delivery.messageId)) return Effect.void
          reporting.add(delivery.messageId)
          const acceptedAt = Date.parse(delivery.acceptedAt)
          return Effect.gen(function*() {
            for (const [i, stage] of STAGES.entries()) {
              if (stage !== "sent" && delivery.to === MAGIC.staysAtSent) return
              const known = stageTime(delivery, stage)
              const at = known === null ? acceptedAt + delays[i]! : Date.parse(known)
              const wait = at - (yield* Clock.currentTimeMillis)
              if (wait > 0) yield* Effect.sleep(wait)
              yield* Queue.offer(events, receipt(delivery.messageId, stage, at))
            }
          }).pipe(
            Effect.ensuring(
              Effect.zipRight(
                Effect.sync(() => reporting.delete(delivery.messageId)),
                Ref.update(pending, (n) => n - 1)
              )
            ),
            Effect.forkIn(scope),
            Effect.zipRight(Ref.update(pending, (n) => n + 1)),
            Effect.asVoid
          )
        }

        const send = (message: OutgoingMessage) =>
          Effect.gen(function*() {
            if (!(yield* takeToken)) {
              return refused(true, PROVIDER_RATE_LIMITED, `The sandbox network accepts ${mps} messages per second`)
            }
            if (message.content?._tag === "media") {
              const media = yield* mediaRepo.findById(message.content.mediaId)
              if (Option.isNone(media) || media.value.status !== "ready") {
                return refused(false, "media_unavailable", "The file is no longer stored")
              }
            }
            // counted, and accepted unless a magic number says otherwise (the second fails twice
            // first, the first never gets through)
            const delivery = yield* offer({
              messageId: message.id,
              channelId: channel.id,
              to: message.to,
              at: Schemas.toTimestamp(yield* Clock.currentTimeMillis),
              acceptFromOffer: message.to === MAGIC.failsPermanently
                ? undefined
                : message.to === MAGIC.failsTwiceThenSucceeds
                ? 3
                : 1,
              receiptDelaysMs: message.to === MAGIC.staysAtSent ? delays.slice(0, 1) : delays
            })
            if (Option.isNone(delivery)) {
              return message.to === MAGIC.failsPermanently
                ? refused(false, "recipient_unreachable", "The recipient cannot receive messages")
                : refused(true, "network_timeout", "The network did not answer in time")
            }
            // accepted now or before: one delivery, whose receipts this connection reports
            yield* report(delivery.value)
            return accepted
          }).pipe(
            // the network (its table) could not be reached: nothing went out, or the offer went
            // through and the next one finds it (one delivery per message): tried again later
            Effect.catchTag("DatabaseUnavailable", () =>
              Effect.succeed(refused(true, "network_timeout", "The network did not answer in time")))
          )

        const simulateInbound = (input: SimulatedInbound) =>
          Effect.gen(function*() {
            const at = yield* Clock.currentTimeMillis
            const nonce = yield* Random.nextIntBetween(0, 2 ** 31)
            yield* Queue.offer(events, {
              _tag: "Inbound",
              providerMessageId: input.providerMessageId ?? `sbx-in-${at.toString(36)}-${nonce.toString(36)}`,
              sender: { phoneNumber: input.from, whatsappLid: null },
              body: input.body,
              quotedProviderMessageId: input.quotedProviderMessageId,
              at,
              // a simulated group chat's message: its participant wrote (docs/API.md "Group chats")
              ...(input.groupChat === undefined ? {} : { groupChat: input.groupChat }),
              ...(input.mentions === undefined || input.mentions.length === 0
                ? {}
                : { mentions: input.mentions.map((phoneNumber) => ({ phoneNumber, whatsappLid: null })) })
            })
          })

        // a reconnect hears what is still under way
        const since = Schemas.toTimestamp((yield* Clock.currentTimeMillis) - REPLAY_WINDOW_MS)
        yield* Effect.forEach(yield* network.unfinished(channel.id, since), report, { discard: true })

        return {
          capabilities: { max_throughput_mps: mps, message_types: Messaging.MESSAGE_TYPES.sandbox },
          send,
          events: Stream.fromQueue(events),
          pendingReceipts: Ref.get(pending),
          simulateInbound,
          // the simulated contact's phone shows blue ticks: nothing to carry further
          markRead: () => Effect.void,
          dropWhenIdle: true
        } satisfies ChannelConnection
      }))

    /**
     * The bytes of a simulated inbound file: given inline (`{data_base64}`, at most 1 MiB, the
     * sandbox inbound route checked it) or a stored media of the workspace (`{media_id}`).
     */
    const downloadMedia = (_channelId: string, source: unknown): Stream.Stream<Uint8Array, MediaDownloadFailed> => {
      const decoded = Schema.decodeUnknownOption(SandboxMediaSource)(source)
      if (Option.isNone(decoded)) {
        return Stream.fail(new MediaDownloadFailed({ retryable: false, reason: "The simulated file is unusable" }))
      }
      const given = decoded.value
      if ("data_base64" in given) return Stream.succeed(new Uint8Array(Buffer.from(given.data_base64, "base64")))
      const opened: Effect.Effect<
        Stream.Stream<Uint8Array, MediaDownloadFailed | DatabaseUnavailable.DatabaseUnavailable>,
        DatabaseUnavailable.DatabaseUnavailable
      > = Effect.gen(function*() {
        const found = yield* mediaRepo.findById(given.media_id)
        if (Option.isNone(found) || found.value.status !== "ready" || found.value.size_bytes === null) {
          return Stream.fail(new MediaDownloadFailed({ retryable: false, reason: "The media named is not stored" }))
        }
        return found.value.size_bytes === 0 ? Stream.empty : store.read(given.media_id, 0, found.value.size_bytes - 1)
      })
      return Stream.unwrap(opened).pipe(
        Stream.catchTag(
          "DatabaseUnavailable",
          () => Stream.fail(new MediaDownloadFailed({ retryable: true, reason: "The media store is unavailable" }))
        )
      )
    }

    return { connect, downloadMedia } satisfies ChannelProvider
  }),
  dependencies: [
    SandboxNetworkRepo.SandboxNetworkRepo.Default,
    MediaRepo.MediaRepo.Default,
    MediaStore.MediaStore.Default
  ]
}) {}
