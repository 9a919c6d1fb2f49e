/**
 * Helpers for QR connection tests: a connection to a fake WhatsApp server with test timings,
 * waiting for events with a clear failure, and pairing in one step.
 */
import type { SqlClient } from "@effect/sql"
import { MediaRepo, MediaStore } from "@switchboard/db"
import { type ChannelStateMachine, Ids } from "@switchboard/domain"
import {
  type QrAuthStateRepo,
  type QrConnection,
  QrConnectionConfig,
  type QrConnectionEvent,
  QrProvider,
  WhatsAppRoot
} from "@switchboard/providers"
import { Duration, Effect, Layer, Queue, Redacted, type Scope } from "effect"
import type { FakeWhatsApp } from "../fake-whatsapp/index.js"

export type Settings = Partial<QrConnectionConfig.QrConnectionConfig["Type"]>

/** Test timings: short timeouts and reconnect delays, so failures show in seconds. */
export const settings = (
  wa: FakeWhatsApp,
  overrides: Settings = {}
): QrConnectionConfig.QrConnectionConfig["Type"] => ({
  ...QrConnectionConfig.defaults,
  websocketUrl: wa.url,
  connectTimeout: Duration.seconds(10),
  queryTimeout: Duration.seconds(10),
  reconnectBaseDelay: Duration.millis(40),
  reconnectMaxDelay: Duration.millis(200),
  reconnectMaxAttempts: 3,
  ...overrides
})

export interface Observed {
  readonly connection: QrConnection.QrConnection
  /** the provider service that made it (media downloads go through its live connections) */
  readonly provider: QrProvider.QrProvider
  /** every event seen so far, in order */
  readonly seen: Array<QrConnectionEvent.QrConnectionEvent>
  /** the next event matching `predicate` (events before it are recorded in `seen`) */
  readonly next: <E extends QrConnectionEvent.QrConnectionEvent>(
    predicate: (e: QrConnectionEvent.QrConnectionEvent) => e is E,
    what: string
  ) => Effect.Effect<E>
  /** moves every event reported so far into `seen` */
  readonly drain: Effect.Effect<void>
}

type Tagged<T extends QrConnectionEvent.QrConnectionEvent["_tag"]> = Extract<
  QrConnectionEvent.QrConnectionEvent,
  { _tag: T }
>

export const is =
  <T extends QrConnectionEvent.QrConnectionEvent["_tag"]>(tag: T, where: (e: Tagged<T>) => boolean = () => true) =>
  (e: QrConnectionEvent.QrConnectionEvent): e is Tagged<T> => e._tag === tag && where(e as Tagged<T>)

/** A connection for `channelId` on the fake server, subscribed before anything happens. */
export const connect = (
  wa: FakeWhatsApp,
  options: {
    readonly channelId: string
    readonly settings?: Settings
    readonly initialStatus?: ChannelStateMachine.ChannelStatus
  }
): Effect.Effect<Observed, never, Scope.Scope | QrAuthStateRepo.QrAuthStateRepo | SqlClient.SqlClient> =>
  Effect.gen(function*() {
    WhatsAppRoot.useFakeWhatsAppRoot(wa.rootPublicKey)
    // the provider as a service would run in a runner, with this test's settings
    const provider = yield* QrProvider.QrProvider.pipe(
      Effect.provide(
        QrProvider.QrProvider.DefaultWithoutDependencies.pipe(
          Layer.provide(Layer.mergeAll(MediaRepo.MediaRepo.Default, MediaStore.MediaStore.Default))
        )
      ),
      Effect.provideService(QrConnectionConfig.QrConnectionConfig, settings(wa, options.settings))
    )
    const connection = yield* provider.connect({
      channelId: options.channelId,
      ...(options.initialStatus ? { initialStatus: options.initialStatus } : {})
    })
    const queue = yield* connection.subscribe
    const seen: Array<QrConnectionEvent.QrConnectionEvent> = []
    let cursor = 0
    const next = <E extends QrConnectionEvent.QrConnectionEvent>(
      predicate: (e: QrConnectionEvent.QrConnectionEvent) => e is E,
      what: string
    ) =>
      Effect.gen(function*() {
        while (true) {
          while (cursor < seen.length) {
            const e = seen[cursor++]!
            if (predicate(e)) return e
          }
          seen.push(yield* Queue.take(queue))
        }
      }).pipe(
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error(`no ${what}; saw ${describe(seen)}`) }),
        Effect.orDie
      )
    const drain = Effect.map(Queue.takeAll(queue), (events) => {
      seen.push(...events)
    })
    return { connection, provider, seen, next, drain }
  })

/** Events as a short readable list (QR codes stay redacted). */
export const describe = (events: ReadonlyArray<QrConnectionEvent.QrConnectionEvent>) =>
  events.map((e) =>
    e._tag === "state"
      ? `state ${e.from}->${e.to} (${e.reason}${e.closeCode ? ` ${e.closeCode}` : ""})`
      : e._tag === "qr"
      ? `qr #${e.sequence}`
      : e._tag
  ).join(", ")

/** Starts pairing, lets the fake phone scan the first code and waits for `connected`. */
export const pair = (wa: FakeWhatsApp, observed: Observed) =>
  Effect.gen(function*() {
    yield* observed.connection.start
    const qr = yield* observed.next(is("qr"), "QR code")
    yield* wa.phone.scan(Redacted.value(qr.code))
    return yield* observed.next(is("state", (e) => e.to === "connected"), "connected")
  })

export const newChannelId = Ids.newId("ch")

/**
 * A local port nothing listens on: connecting to it is refused. Port 1 (tcpmux): nothing here binds
 * it, and the OS never hands it out for `listen(0)`. A port taken from the OS and closed again
 * (as this was before) can be handed to another test file's fake WhatsApp server a moment later,
 * which then answered the "unreachable" channel with a QR code.
 */
export const closedPort: Effect.Effect<number> = Effect.succeed(1)

/** The state events in `seen`, as `from->to`. */
export const transitions = (seen: ReadonlyArray<QrConnectionEvent.QrConnectionEvent>) =>
  seen.flatMap((e) => (e._tag === "state" ? [`${e.from}->${e.to}`] : []))
