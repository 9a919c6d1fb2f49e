/**
 * The QR provider as a service: what a Channel entity needs, with the auth-state repository and
 * the QR settings provided once at the edge. `connect` builds a `QrConnection` for one channel,
 * living as long as the caller's scope (e.g. the entity's).
 *
 * Layer: `QrProvider.Default` needs `SqlClient` (through `QrAuthStateRepo`) and
 * `QrConnectionConfig` (`QrConnectionConfig.layerFromEnv` in services, `layer({...})` in tests),
 * which also carries `SECRETS_ENCRYPTION_KEY`, the key that seals the stored link.
 */
import type { ChannelStatus } from "@switchboard/domain"
import { Effect, type Scope } from "effect"
import { QrAuthStateRepo } from "./QrAuthStateRepo.js"
import * as QrConnection from "./QrConnection.js"
import { QrConnectionConfig } from "./QrConnectionConfig.js"
import { silenceSignalConsole } from "./SignalConsole.js"

export class QrProvider extends Effect.Service<QrProvider>()("@switchboard/providers/QrProvider", {
  effect: Effect.gen(function*() {
    // before any socket: libsignal would print session keys to the console
    silenceSignalConsole()
    const repo = yield* QrAuthStateRepo
    const config = yield* QrConnectionConfig

    /** One channel's connection; nothing connects until its `start` or `resume`. */
    const connect = (options: {
      readonly channelId: string
      readonly initialStatus?: ChannelStatus
    }): Effect.Effect<QrConnection.QrConnection, never, Scope.Scope> =>
      QrConnection.make(options).pipe(
        Effect.provideService(QrAuthStateRepo, repo),
        Effect.provideService(QrConnectionConfig, config)
      )

    /** Capabilities of every QR channel. */
    const capabilities = QrConnection.qrCapabilities

    /** Forgets a channel's stored link (an archived channel keeps no credentials). */
    const forget = (channelId: string) => repo.wipe(channelId)

    return { connect, capabilities, forget } as const
  }),
  dependencies: [QrAuthStateRepo.Default]
}) {}
