/**
 * The QR provider as a service: what a Channel entity needs, with the auth-state repository and
 * the QR settings provided once at the edge. `connect` builds a `QrConnection` for one channel,
 * living as long as the caller's scope (e.g. the entity's).
 *
 * Layer: `QrProvider.Default` needs `SqlClient` (through `QrAuthStateRepo`) and
 * `QrConnectionConfig` (`QrConnectionConfig.layerFromEnv` in services, `layer({...})` in tests),
 * which also carries `SECRETS_ENCRYPTION_KEY`, the key that seals the stored link.
 */
import { DatabaseUnavailable, MediaRepo, MediaStore } from "@switchboard/db"
import type { ChannelStateMachine } from "@switchboard/domain"
import { Effect, Option, type Scope, Stream } from "effect"
import { Readable } from "node:stream"
import { QrAuthStateRepo } from "./QrAuthStateRepo.js"
import * as QrConnection from "./QrConnection.js"
import { QrConnectionConfig } from "./QrConnectionConfig.js"
import * as QrMediaDownload from "./QrMediaDownload.js"
import { silenceSignalConsole } from "./SignalConsole.js"

export class QrProvider extends Effect.Service<QrProvider>()("@switchboard/providers/QrProvider", {
  effect: Effect.gen(function*() {
    // before any socket: libsignal would print session keys to the console
    silenceSignalConsole()
    const repo = yield* QrAuthStateRepo
    const config = yield* QrConnectionConfig
    const mediaRepo = yield* MediaRepo.MediaRepo
    const store = yield* MediaStore.MediaStore

    /** The connections on this runner, by channel (a media download asks the live socket for a re-upload). */
    const live = new Map<string, QrConnection.QrConnection>()

    /** One channel's connection; nothing connects until its `start` or `resume`. */
    const connect = (options: {
      readonly channelId: string
      readonly initialStatus?: ChannelStateMachine.ChannelStatus
    }): Effect.Effect<QrConnection.QrConnection, never, Scope.Scope> =>
      QrConnection.make(options).pipe(
        Effect.provideService(QrAuthStateRepo, repo),
        Effect.provideService(QrConnectionConfig, config),
        Effect.tap((connection) =>
          Effect.acquireRelease(
            Effect.sync(() => live.set(options.channelId, connection)),
            () =>
              Effect.sync(() => {
                if (live.get(options.channelId) === connection) live.delete(options.channelId)
              })
          )
        )
      )

    /**
     * The bytes of an inbound media (`InboundMedia.source` of a QR channel), streamed. A re-upload
     * request, when needed, goes through the channel's connection if it is on this runner.
     */
    const downloadMedia = (channelId: string, source: unknown) =>
      QrMediaDownload.download(
        source,
        Option.map(Option.fromNullable(live.get(channelId)), (connection) => connection.reupload)
      )

    /**
     * Opens the bytes of a stored media to send, as a Node stream read chunk by chunk from the
     * media store (Baileys encrypts and uploads it while it reads); none when the media is not
     * stored. Nothing is read before the opener is called.
     */
    const readMedia = (mediaId: string): Effect.Effect<Option.Option<() => Readable>> =>
      Effect.map(
        DatabaseUnavailable.dieWhenUnavailable(mediaRepo.findById(mediaId)),
        (found) =>
          Option.flatMap(found, (media) => {
            const size = media.size_bytes
            if (media.status !== "ready" || size === null) return Option.none()
            return Option.some(() =>
              Readable.fromWeb(
                Stream.toReadableStream(
                  size === 0 ? Stream.empty : store.read(mediaId, 0, size - 1)
                ) as import("node:stream/web").ReadableStream<Uint8Array>
              )
            )
          })
      )

    /** Capabilities of every QR channel. */
    const capabilities = QrConnection.qrCapabilities

    /** Forgets a channel's stored link (an archived channel keeps no credentials). */
    const forget = (channelId: string) => repo.wipe(channelId)

    return { connect, capabilities, forget, downloadMedia, readMedia } as const
  }),
  dependencies: [QrAuthStateRepo.Default, MediaRepo.MediaRepo.Default, MediaStore.MediaStore.Default]
}) {}
