/**
 * QR pairing use-cases. The channel's entity owns the link and
 * produces the codes; this side checks the channel, asks the entity, and turns its `WatchPairing`
 * stream into server-sent events. The code appears only in stream frames: never in a status
 * response, a log line or a webhook.
 */
import { QrPairingApi } from "@switchboard/api"
import { ChannelsRepo } from "@switchboard/db"
import { type ChannelStateMachine, Errors, type Messaging, Schemas } from "@switchboard/domain"
import { ChannelProtocol } from "@switchboard/entities/protocol"
import type { QrConnectionEvent } from "@switchboard/providers/contract"
import { Effect, Option, Redacted, Stream } from "effect"
import type { SseFrame } from "../Sse.js"
import { QrSafety } from "./QrSafety.js"

/** How long an answer from the channel's runner may take (a failover takes 7-10 s). */
const ENTITY_TIMEOUT = "15 seconds"

const refusedStatus = (channelId: string, status: string) =>
  new Errors.Conflict({
    message: status === "archived"
      ? `Channel ${channelId} is archived and cannot pair`
      : `Channel ${channelId} is ${status} and cannot pair`,
    details: { reason: status === "archived" ? "channel_archived" : "channel_suspended", status }
  })

const unreachable = () =>
  new Errors.ServiceUnavailable({
    message: "The channel's runner did not answer; retry shortly",
    details: { reason: "runner_unavailable" }
  })

const iso = (ms: number | null) => (ms === null ? null : Schemas.toTimestamp(ms))

/** What shows, as the frames carry it: a QR code (`qr`) or a pairing code (`pairing_code`), the other `null`. */
const codeFields = (
  shown: {
    readonly code: Redacted.Redacted<string>
    readonly expiresAt: number
    readonly method?: "code" | undefined
  } | null
) => {
  const code = shown === null ? null : Redacted.value(shown.code)
  const expiresAt = shown === null ? null : Schemas.toTimestamp(shown.expiresAt)
  const byCode = shown?.method === "code"
  return {
    qr: byCode ? null : code,
    qr_expires_at: byCode ? null : expiresAt,
    pairing_code: byCode ? code : null,
    pairing_code_expires_at: byCode ? expiresAt : null
  }
}

/**
 * One SSE frame per pairing event, of the four the stream has (docs/QR-CHANNELS.md "QR channels"): `snapshot`,
 * `qr.updated`, `qr.state`, `qr.expired`. An attempt that could not reach WhatsApp changes no
 * status: it is a `qr.state` from the channel's status (`status`: the last the stream told) to the
 * same, with `reason: null` and the `connection_error`.
 */
export const toSseFrame = (
  channelId: string,
  frame: QrConnectionEvent.QrPairingFrame,
  status: ChannelStateMachine.ChannelStatus
): SseFrame => {
  switch (frame._tag) {
    case "snapshot": {
      const showing = codeFields(frame.qr)
      return {
        event: "snapshot",
        data: {
          channel_id: channelId,
          status: frame.status,
          qr_available: showing.qr !== null,
          qr: showing.qr,
          qr_expires_at: showing.qr_expires_at,
          pairing_code_available: showing.pairing_code !== null,
          pairing_code: showing.pairing_code,
          pairing_code_expires_at: showing.pairing_code_expires_at,
          phone_number: frame.phoneNumber,
          connection_error: QrPairingApi.QrConnectionError.fromDomain(frame.connectionError)
        },
        ...(frame.qr === null ? {} : { id: String(frame.qr.sequence) })
      }
    }
    case "qr":
      return {
        event: "qr.updated",
        id: String(frame.sequence),
        data: { channel_id: channelId, ...codeFields(frame), sequence: frame.sequence }
      }
    case "state":
      return {
        event: "qr.state",
        data: {
          channel_id: channelId,
          from_status: frame.from,
          to_status: frame.to,
          reason: frame.reason,
          connection_error: QrPairingApi.QrConnectionError.fromDomain(frame.connectionError)
        }
      }
    case "expired":
      return { event: "qr.expired", data: { channel_id: channelId } }
    case "connection_error":
      return {
        event: "qr.state",
        data: {
          channel_id: channelId,
          from_status: status,
          to_status: status,
          reason: null,
          connection_error: QrPairingApi.QrConnectionError.fromDomain(frame)
        }
      }
  }
}

/** The channel's status once `frame` is told (the snapshot's, then each change's). */
export const statusAfter = (
  status: ChannelStateMachine.ChannelStatus,
  frame: QrConnectionEvent.QrPairingFrame
): ChannelStateMachine.ChannelStatus =>
  frame._tag === "snapshot" ? frame.status : frame._tag === "state" ? frame.to : status

/**
 * The stream ends after the frame that connects the channel, says every code expired, or leaves
 * it `disconnected` (gave up, logged out: only a new `qr/start` moves it again). A snapshot of a
 * `disconnected` channel does not end it: the watcher is about to call `qr/start`.
 */
const isLast = (frame: QrConnectionEvent.QrPairingFrame) =>
  (frame._tag === "state" && (frame.to === "connected" || frame.to === "disconnected")) ||
  frame._tag === "expired" ||
  (frame._tag === "snapshot" && frame.status === "connected")

export class QrPairing extends Effect.Service<QrPairing>()("@switchboard/service-api/QrPairing", {
  effect: Effect.gen(function*() {
    const channels = yield* ChannelsRepo.ChannelsRepo
    const channelClient = yield* ChannelProtocol.ChannelEntity.client
    const qrSafety = yield* QrSafety

    /** The workspace's QR channel, or the documented error. */
    const qrChannel = Effect.fn("QrPairing.qrChannel")(function*(workspaceId: string, id: string) {
      const found = yield* channels.find(workspaceId, id)
      if (Option.isNone(found)) {
        return yield* new Errors.ChannelNotFound({
          message: `No channel ${id} in this workspace`,
          details: { resource: "channel", id }
        })
      }
      if (found.value.channel.provider !== "qr") {
        return yield* new Errors.ChannelCapabilityUnavailable({
          message: `Channel ${id} is a ${found.value.channel.provider} channel; QR pairing is for qr channels`,
          details: { reason: "not_a_qr_channel", provider: found.value.channel.provider }
        })
      }
      return found.value
    })

    const pairable = (channel: Messaging.Channel) =>
      channel.status === "archived" || channel.status === "suspended"
        ? Effect.fail(refusedStatus(channel.id, channel.status))
        : Effect.void

    const toStatus = (channelId: string, view: ChannelProtocol.PairingView, pairingStartedAt: string | null) =>
      new QrPairingApi.PairingStatus({
        channel_id: channelId,
        status: view.status,
        qr_available: view.qr_available,
        qr_expires_at: iso(view.qr_expires_at),
        phone_number: view.phone_number,
        pairing_started_at: pairingStartedAt,
        connection_error: QrPairingApi.QrConnectionError.fromDomain(view.connection_error),
        pairing_code_available: view.pairing_code_available ?? false,
        pairing_code_expires_at: iso(view.pairing_code_expires_at ?? null)
      })

    /** The recorded status, for a channel whose entity has no pairing (archived, suspended) or did not answer. */
    const fromRow = (channel: Messaging.Channel, pairingStartedAt: string | null) =>
      new QrPairingApi.PairingStatus({
        channel_id: channel.id,
        status: channel.status,
        qr_available: false,
        qr_expires_at: null,
        phone_number: channel.phone_number,
        pairing_started_at: pairingStartedAt,
        connection_error: null,
        pairing_code_available: false,
        pairing_code_expires_at: null
      })

    /** Asks the entity; its own refusal (archived or suspended meanwhile) is a 409, silence a 503. */
    const ask = <A, R>(channelId: string, call: Effect.Effect<A, unknown, R>): Effect.Effect<
      A,
      Errors.Conflict | Errors.ServiceUnavailable,
      R
    > =>
      call.pipe(
        Effect.timeoutFail({ duration: ENTITY_TIMEOUT, onTimeout: unreachable }),
        Effect.catchAllDefect((defect) => Effect.fail(defect)),
        Effect.mapError((error): Errors.Conflict | Errors.ServiceUnavailable =>
          error instanceof ChannelProtocol.PairingUnavailable
            ? refusedStatus(channelId, error.status)
            : error instanceof Errors.ServiceUnavailable
            ? error
            : unreachable()
        )
      )

    const startedAt = (channelId: string) =>
      Effect.map(
        channels.findById(channelId),
        (row) => Option.match(row, { onNone: () => null, onSome: (r) => r.pairingStartedAt })
      )

    /** A pairing command (start, logout) on a QR channel that may pair; answers the status after it. */
    const command = (
      workspaceId: string,
      id: string,
      call: (client: ReturnType<typeof channelClient>) => Effect.Effect<ChannelProtocol.PairingView, unknown>
    ) =>
      Effect.gen(function*() {
        const row = yield* qrChannel(workspaceId, id)
        yield* pairable(row.channel)
        const view = yield* ask(id, call(channelClient(id)))
        return toStatus(id, view, yield* startedAt(id))
      })

    /**
     * `qr/start`: QR codes, or with `{method: "code", phone_number}` WhatsApp's pairing code for
     * the number (422 when the two do not go together).
     */
    const start = Effect.fn("QrPairing.start")(function*(
      workspaceId: string,
      id: string,
      body: typeof QrPairingApi.StartPairingRequest.Type | null
    ) {
      const method = body?.method ?? "qr"
      const phoneNumber = body?.phone_number
      if (method === "code" && phoneNumber === undefined) {
        return yield* new Errors.ValidationError({
          message: "Linking with a code needs the number to link: phone_number, in E.164 (+4915112345678)",
          details: { issues: [{ path: ["phone_number"], message: "Required with method \"code\"" }] }
        })
      }
      if (method === "qr" && phoneNumber !== undefined) {
        return yield* new Errors.ValidationError({
          message: "phone_number is only for linking with a code (method \"code\")",
          details: { issues: [{ path: ["phone_number"], message: "Only with method \"code\"" }] }
        })
      }
      return yield* command(
        workspaceId,
        id,
        (client) => client.StartPairing(phoneNumber === undefined ? {} : { pairing_code_for: phoneNumber })
      )
    })

    const status = Effect.fn("QrPairing.status")(function*(workspaceId: string, id: string) {
      const row = yield* qrChannel(workspaceId, id)
      if (row.channel.status === "archived" || row.channel.status === "suspended") {
        return fromRow(row.channel, row.pairingStartedAt)
      }
      // a runner that does not answer: the recorded status, without a code
      return yield* ask(id, channelClient(id).PairingStatus()).pipe(
        Effect.map((view) => toStatus(id, view, row.pairingStartedAt)),
        Effect.orElseSucceed(() => fromRow(row.channel, row.pairingStartedAt))
      )
    })

    const logout = Effect.fn("QrPairing.logout")((workspaceId: string, id: string) =>
      command(workspaceId, id, (client) => client.LogoutPairing())
    )

    /** SSE frames: a snapshot, then codes, status changes and expiry, ending after the last one. */
    const frames = Effect.fn("QrPairing.frames")(function*(workspaceId: string, id: string) {
      const row = yield* qrChannel(workspaceId, id)
      yield* pairable(row.channel)
      const watch = channelClient(id).WatchPairing()
      return watch.pipe(
        Stream.takeUntil(isLast),
        Stream.mapAccum(row.channel.status, (status, frame) => {
          const next = statusAfter(status, frame)
          return [next, toSseFrame(id, frame, status)] as const
        }),
        // the runner went away mid-stream: end; the client reconnects and gets a fresh snapshot
        Stream.catchAllCause(() => Stream.empty)
      )
    })

    /** The QR channel's safety usage (`GET .../qr/safety`). */
    const safety = Effect.fn("QrPairing.safety")(function*(workspaceId: string, id: string) {
      const row = yield* qrChannel(workspaceId, id)
      return yield* qrSafety.usageOf(row.channel)
    })

    return { start, status, logout, frames, safety } as const
  }),
  dependencies: [ChannelsRepo.ChannelsRepo.Default, QrSafety.Default]
}) {}
