/**
 * A linked-device (QR) channel's pairing handlers: `StartPairing` / `LogoutPairing` /
 * `PairingStatus` answer once the channel row shows the status the link reached, and
 * `WatchPairing` (the api node's SSE stream) sends a snapshot, then QR codes, status changes,
 * expiry and failed attempts to reach WhatsApp. The QR code travels only on that stream.
 */
import { Rpc } from "@effect/rpc"
import type { ChannelsRepo } from "@switchboard/db"
import { DatabaseUnavailable } from "@switchboard/db"
import { Schemas } from "@switchboard/domain"
import type { ChannelProvider, QrConnectionEvent } from "@switchboard/providers"
import { Clock, Effect, Option, Schedule, Stream } from "effect"
import type { Connected } from "./ChannelConnection.js"
import { PairingUnavailable, PairingView } from "./ChannelProtocol.js"

/**
 * Made on a channel's first pairing call (`ChannelEntity`), not for every channel: most channels
 * on a runner never pair (sandbox, Cloud API), and these closures were a share of each idle
 * entity's memory (bench/RESULTS.md 4e).
 */
export const makePairingHandlers = <E, R>(options: {
  readonly channelId: string
  readonly channels: ChannelsRepo.ChannelsRepo
  /** the channel's connection, connecting first if needed */
  readonly reconcile: Effect.Effect<Option.Option<Connected>, E, R>
  /** completes once this runner shuts down */
  readonly runnerStopping: Effect.Effect<unknown>
}) => {
  const { channelId, channels, reconcile, runnerStopping } = options

  /** The channel's pairing, connecting first if needed. */
  const pairing = Effect.gen(function*() {
    const connected = yield* reconcile
    if (Option.isNone(connected) || connected.value.connection.pairing === undefined) {
      const found = yield* channels.findById(channelId)
      return yield* new PairingUnavailable({
        status: Option.match(found, { onNone: () => "unknown", onSome: (row) => row.channel.status })
      })
    }
    return connected.value.connection.pairing
  })

  const viewOf = (p: ChannelProvider.Pairing) =>
    Effect.map(p.snapshot, (snap) =>
      new PairingView({
        status: snap.status,
        qr_available: snap.qr !== null && snap.qr.method !== "code",
        qr_expires_at: snap.qr !== null && snap.qr.method !== "code" ? snap.qr.expiresAt : null,
        phone_number: snap.phoneNumber,
        connection_error: snap.connectionError,
        pairing_code_available: snap.qr?.method === "code",
        pairing_code_expires_at: snap.qr?.method === "code" ? snap.qr.expiresAt : null
      }))

  /**
   * Waits (up to 3 s) until the channel row shows `status`, recorded by the events fiber, which
   * reads the same status change as the stream: a client that sends as soon as its stream says
   * `connected` was refused with 409 CHANNEL_NOT_CONNECTED when the stream got there first
   * (`test/qrFailover.e2e.test.ts`, a CI run of 2026-11-28 with both cores busy).
   */
  const rowShows = (status: string) =>
    channels.findById(channelId).pipe(
      Effect.repeat({
        until: (row) => Option.isNone(row) || row.value.channel.status === status,
        schedule: Schedule.spaced("25 millis").pipe(Schedule.upTo("3 seconds"))
      })
    )

  /** Answers once the channel row shows the status the link reached (recorded by the events fiber). */
  const recorded = (p: ChannelProvider.Pairing) =>
    Effect.gen(function*() {
      const view = yield* viewOf(p)
      yield* rowShows(view.status)
      return view
    })

  // the protocol declares no database failure: a passing one is a defect for the api node (503)
  return {
    StartPairing: (request: { readonly pairing_code_for?: string | undefined }) =>
      Rpc.fork(DatabaseUnavailable.dieWhenUnavailable(Effect.gen(function*() {
        const p = yield* pairing
        yield* channels.markPairingStarted(channelId, Schemas.toTimestamp(yield* Clock.currentTimeMillis))
        const number = request.pairing_code_for
        yield* number === undefined || p.startWithCode === undefined ? p.start : p.startWithCode(number)
        return yield* recorded(p)
      }))),
    LogoutPairing: () =>
      Rpc.fork(DatabaseUnavailable.dieWhenUnavailable(Effect.gen(function*() {
        const p = yield* pairing
        yield* p.logout
        return yield* recorded(p)
      }))),
    PairingStatus: () => Rpc.fork(DatabaseUnavailable.dieWhenUnavailable(Effect.flatMap(pairing, viewOf))),
    WatchPairing: () =>
      Rpc.fork(Stream.unwrapScoped(DatabaseUnavailable.dieWhenUnavailable(Effect.gen(function*() {
        const p = yield* pairing
        // subscribed before the snapshot: nothing falls in between
        const events = yield* p.subscribe
        const snap = yield* p.snapshot
        const first: QrConnectionEvent.QrPairingFrame = {
          _tag: "snapshot",
          channelId,
          status: snap.status,
          phoneNumber: snap.phoneNumber,
          qr: snap.qr,
          connectionError: snap.connectionError
        }
        const later: Stream.Stream<QrConnectionEvent.QrPairingFrame> = Stream.fromQueue(events).pipe(
          Stream.filter(
            (
              e
            ): e is Extract<
              QrConnectionEvent.QrConnectionEvent,
              { _tag: "qr" | "state" | "expired" | "connection_error" }
            > => e._tag === "qr" || e._tag === "state" || e._tag === "expired" || e._tag === "connection_error"
          ),
          Stream.mapEffect((e): Effect.Effect<QrConnectionEvent.QrPairingFrame> =>
            e._tag === "state" ? Effect.as(Effect.ignore(rowShows(e.to)), e) : Effect.succeed(e)
          )
        )
        // an open stream is an active request: it would hold the runner's shutdown (15 s)
        return Stream.concat(Stream.succeed(first), later).pipe(Stream.interruptWhen(runnerStopping))
      }))))
  }
}
