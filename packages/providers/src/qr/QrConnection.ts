/**
 * The QR connection's lifecycle: one actor per QR channel that owns its Baileys socket, as a
 * scoped resource, and handles one at a time the owner's commands (`start`, `resume`, `logout`)
 * and everything the socket reports.
 *
 * Each socket gets a generation number; anything a replaced socket still reports is ignored, so at
 * most one socket is live and no stale close can trigger a reconnect. What a close leads to is
 * `QrClosePolicy`; the status and its moves `QrStatus`. What the connection offers its owner
 * (the interface, the snapshot, the capabilities) is `QrConnectionShape`. The socket itself is
 * `QrSocket`; the pairing codes `QrCodes` (`QrPairingCode` when linking by code); sends
 * `QrOutbound`; receipts and acks `QrReceipts`; what others send `QrInbound`; calls `QrCalls`;
 * group chats `QrGroupChats`; restriction signals `QrSignals`; unreachable attempts
 * `QrUnreachable`; JIDs `QrJid`.
 *
 * Over 350 lines on purpose: it is one actor, and its handlers share the actor's state (the live
 * socket and its generation, the reconnect budget, the code showing); the rest is in those modules.
 */
import { ChannelStateMachine } from "@switchboard/domain"
import type { WASocket } from "baileys"
import { Clock, Deferred, Duration, Effect, Fiber, PubSub, Queue, Random, Stream } from "effect"
import { senderOf } from "./BaileysJids.js"
import * as QrAuthState from "./QrAuthState.js"
import { QrAuthStateRepo } from "./QrAuthStateRepo.js"
import * as QrCalls from "./QrCalls.js"
import * as QrClosePolicy from "./QrClosePolicy.js"
import * as QrCodes from "./QrCodes.js"
import type { QrConnectFailure } from "./QrConnectFailure.js"
import { QrConnectionConfig } from "./QrConnectionConfig.js"
import type { QrConnectionEvent } from "./QrConnectionEvent.js"
import { qrCapabilities, type QrConnection } from "./QrConnectionShape.js"
import * as QrGroupChats from "./QrGroupChats.js"
import * as QrInbound from "./QrInbound.js"
import { jidToE164, phoneOfLid } from "./QrJid.js"
import * as QrMetrics from "./QrMetrics.js"
import * as QrOutbound from "./QrOutbound.js"
import * as QrPairingCode from "./QrPairingCode.js"
import * as QrReceipts from "./QrReceipts.js"
import * as QrSignals from "./QrSignals.js"
import * as QrSocket from "./QrSocket.js"
import * as QrStatus from "./QrStatus.js"
import * as QrUnreachable from "./QrUnreachable.js"

// what this module's namespace has always offered (`QrConnection.readerJid`, ...)
export type { QrCodeSnapshot } from "./QrCodes.js"
export { qrCapabilities, type QrConnection, type QrSnapshot } from "./QrConnectionShape.js"
export { e164ToJid, jidToE164, readerJid } from "./QrJid.js"
export { baileysContent, baileysQuoted, type QrOutboundText } from "./QrOutbound.js"

/** The owner's commands, what the socket reports, and the actor's own timers. */
type Command =
  | { readonly _tag: "Start"; readonly done: Effect.Effect<void>; readonly phoneNumber?: string }
  | { readonly _tag: "Resume"; readonly done: (found: boolean) => Effect.Effect<void> }
  | { readonly _tag: "Logout"; readonly done: Effect.Effect<void> }
  | QrSocket.QrSocketEvent
  | QrPairingCode.PairingCodeRefused
  | { readonly _tag: "SendThrottled" }
  | { readonly _tag: "ReconnectDue"; readonly generation: number }

/** Builds the connection; nothing connects until `start` or `resume`. The socket ends with the scope (the link is kept). */
export const make = Effect.fn("QrConnection.make")(function*(options: {
  readonly channelId: string
  /** the channel's stored status; `state` events report transitions from it (default `pending`) */
  readonly initialStatus?: ChannelStateMachine.ChannelStatus
}) {
  const config = yield* QrConnectionConfig
  const repo = yield* QrAuthStateRepo
  const runtime = yield* Effect.runtime<never>()
  const scope = yield* Effect.scope
  const channelId = options.channelId
  const annotations = { channel_id: channelId }

  const events = yield* Effect.acquireRelease(PubSub.unbounded<QrConnectionEvent>(), PubSub.shutdown)
  const commands = yield* Effect.acquireRelease(Queue.unbounded<Command>(), Queue.shutdown)

  // actor state: only the actor fiber writes it
  let generation = 0
  let socket: WASocket | undefined
  let open = false
  let auth: QrAuthState.QrAuthState | undefined
  let attempts = 0
  const codes = QrCodes.make(config.qrTimeout)
  let phoneNumber: string | null = null
  let reconnect: Fiber.RuntimeFiber<void> | undefined
  /** someone asked (`qr/start`) and no link opened since: connection failures give up early */
  let interactive = false

  const publish = (event: QrConnectionEvent) => PubSub.publish(events, event)
  const status = QrStatus.make({
    channelId,
    annotations,
    initialStatus: options.initialStatus ?? "pending",
    publish,
    phoneNumber: () => phoneNumber
  })
  const move = status.move
  /** the socket while its link is open, for sends and receipts */
  const link = (): QrSocket.QrLink => ({ socket: open ? socket : undefined, status: status.current() })

  const signals = QrSignals.make({
    channelId,
    annotations,
    publish,
    restrict: (reason) => move({ _tag: "Restriction", reason })
  })
  const receipts = QrReceipts.make({ channelId, annotations, publish, restricted: signals.restricted })
  const inbound = QrInbound.make({
    channelId,
    annotations,
    publish,
    receipts: receipts.report,
    lidPhone: (whatsappLid) => phoneOfLid(socket, whatsappLid)
  })
  const unreachable = QrUnreachable.make({ channelId, annotations, publish })
  const calls = QrCalls.make({ channelId, annotations, publish })
  const groupChats = QrGroupChats.make({ channelId, annotations, publish, queryTimeout: config.queryTimeout })
  /** group chat queries run beside the actor, in the connection's scope (each bounded by the query timeout) */
  const connectionScope = yield* Effect.scope
  const pairingCode = QrPairingCode.make({
    channelId,
    annotations,
    qrTimeout: config.qrTimeout,
    offer: (refused) => Queue.unsafeOffer(commands, refused)
  })

  const cancelReconnect = Effect.suspend(() => {
    const fiber = reconnect
    reconnect = undefined
    return fiber ? Fiber.interrupt(fiber) : Effect.void
  })

  /** Ends the socket, if any; whatever it still reports is stale from here on. */
  const closeSocket = Effect.gen(function*() {
    yield* cancelReconnect
    generation++
    const s = socket
    socket = undefined
    open = false
    if (s) yield* QrSocket.end(s)
  })

  const openSocket = Effect.gen(function*() {
    yield* closeSocket
    const a = auth
    if (!a) return yield* Effect.dieMessage("QrConnection: no auth state loaded")
    const gen = ++generation
    socket = yield* QrSocket.open({
      generation: gen,
      live: () => gen === generation,
      auth: a,
      config,
      runtime,
      annotations,
      secrets: () => [...codes.issued(), ...pairingCode.issued()],
      offer: (event) => {
        Queue.unsafeOffer(commands, event)
      }
    })
  })

  const giveUp = (closeCode: number | null) =>
    Effect.gen(function*() {
      codes.clear()
      yield* move({ _tag: "GaveUp" }, closeCode, unreachable.error())
    })

  /** Backs off with jitter (`QrClosePolicy.reconnectDelay`), then opens a new socket. */
  const scheduleReconnect = (closeCode: number | null, failure: QrConnectFailure | undefined) =>
    Effect.gen(function*() {
      const delay = QrClosePolicy.reconnectDelay(attempts, {
        baseMs: Duration.toMillis(config.reconnectBaseDelay),
        maxMs: Duration.toMillis(config.reconnectMaxDelay)
      }, yield* Random.next)
      attempts++
      yield* QrMetrics.reconnecting(closeCode)
      yield* move({ _tag: "LinkLost" }, closeCode)
      if (failure) yield* unreachable.report(failure, (yield* Clock.currentTimeMillis) + delay)
      yield* Effect.logInfo("qr reconnect scheduled").pipe(Effect.annotateLogs({
        ...annotations,
        attempt: attempts,
        delay_ms: delay,
        ...(closeCode === null ? {} : { close_code: closeCode })
      }))
      const gen = generation
      reconnect = yield* Effect.sleep(Duration.millis(delay)).pipe(
        Effect.zipRight(Queue.offer(commands, { _tag: "ReconnectDue", generation: gen })),
        Effect.asVoid,
        Effect.forkIn(scope)
      )
    })

  /** Logged out (ours or from the phone): nothing of the link may survive. */
  const forgetLink = Effect.gen(function*() {
    yield* auth ? auth.forget : repo.wipe(channelId)
    auth = undefined
    codes.clear()
    phoneNumber = null
  })

  /** A close: what `QrClosePolicy` says, performed. */
  const onClosed = (code: number | undefined, failure: QrConnectFailure | undefined) =>
    Effect.gen(function*() {
      socket = undefined
      open = false
      const closeCode = code ?? null
      yield* Effect.logInfo("qr socket closed").pipe(Effect.annotateLogs({ ...annotations, close_code: String(code) }))
      yield* QrMetrics.closed(closeCode)
      if (failure) unreachable.count()
      else unreachable.clear()
      // a code pairing ends with its socket (a new socket would need a new code), but for the
      // restart after the phone accepted it
      if (pairingCode.shown() && code !== QrClosePolicy.RESTART_REQUIRED) return yield* codeExpired(closeCode)
      const action = QrClosePolicy.onClose({
        code,
        unreached: failure !== undefined,
        paired: auth?.isPaired() ?? false,
        codesShown: codes.shown() || pairingCode.shown(),
        attempts,
        connectFailures: unreachable.failures(),
        interactive
      }, config)
      switch (action._tag) {
        case "Restart":
          attempts++
          yield* QrMetrics.reconnecting(closeCode)
          return yield* openSocket
        case "LoggedOut":
          yield* forgetLink
          return yield* move({ _tag: "LoggedOutFromPhone" }, closeCode)
        case "Terminated":
          codes.clear()
          return yield* move({ _tag: "Terminated", reason: action.reason }, closeCode)
        case "CodesExpired":
          codes.clear()
          yield* publish({ _tag: "expired", channelId })
          return yield* move({ _tag: "CodesExhausted" }, closeCode)
        case "Reconnect":
          return yield* scheduleReconnect(closeCode, failure)
        case "GiveUp":
          if (failure) yield* unreachable.report(failure, null)
          return yield* giveUp(closeCode)
      }
    })

  /** The pairing code was not typed in time (or its socket ended): `expired`, then `disconnected`. */
  const codeExpired = (closeCode: number | null) =>
    Effect.gen(function*() {
      pairingCode.end()
      yield* publish({ _tag: "expired", channelId })
      yield* move({ _tag: "CodesExhausted", pairingCode: true }, closeCode)
    })

  /** Loads the stored auth state; the socket and budgets start afresh. */
  const reset = Effect.gen(function*() {
    yield* closeSocket
    attempts = 0
    unreachable.clear()
    interactive = false
    codes.restart()
    pairingCode.end()
    auth = yield* QrAuthState.load(channelId, config.keyring).pipe(Effect.provideService(QrAuthStateRepo, repo))
    return auth
  })

  const handle = (command: Command): Effect.Effect<void> => {
    switch (command._tag) {
      case "Start":
        return Effect.gen(function*() {
          // archived and suspended channels do not pair (the owner refuses qr/start before this)
          if (ChannelStateMachine.transitionChannel(status.current(), { _tag: "Start" })._tag === "Refused") return
          yield* reset
          pairingCode.want(command.phoneNumber ?? null)
          interactive = true
          yield* move({ _tag: "Start" })
          yield* openSocket
        }).pipe(Effect.ensuring(command.done))
      case "Resume":
        return Effect.gen(function*() {
          if (socket) return yield* command.done(true)
          const loaded = yield* reset
          if (!loaded.isPaired()) {
            // a pairing under way (or a link) that this owner cannot take over: say so, never hang
            yield* move({ _tag: "Interrupted" })
            return yield* command.done(false)
          }
          yield* move({ _tag: "Resume" })
          yield* openSocket
          yield* command.done(true)
        }).pipe(Effect.onError(() => command.done(false)))
      case "Logout":
        return Effect.gen(function*() {
          const s = socket
          const wasOpen = open
          // the 401 close our own logout causes is stale: handled here instead
          generation++
          socket = undefined
          open = false
          yield* cancelReconnect
          unreachable.clear()
          interactive = false
          pairingCode.end()
          if (s && wasOpen) {
            yield* Effect.promise(() => s.logout().catch(() => undefined)).pipe(
              Effect.timeout(config.queryTimeout),
              Effect.ignore
            )
          }
          if (s) yield* QrSocket.end(s)
          yield* forgetLink
          yield* move({ _tag: "Logout" })
        }).pipe(Effect.ensuring(command.done))
      case "SocketQr":
        return command.generation !== generation ? Effect.void : Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          unreachable.clear()
          if (pairingCode.wanted()) {
            // linking by code: Baileys' QR codes only say the socket is ready to pair
            const issued = socket && (yield* pairingCode.onQr(socket, generation, command.left, now))
            if (issued) yield* publish(issued)
            if (issued) yield* move({ _tag: "CodeIssued", pairingCode: true })
            return
          }
          yield* publish({ _tag: "qr", channelId, ...codes.issue(command.code, now) })
          yield* move({ _tag: "CodeIssued" })
        })
      case "SocketOpen":
        return command.generation !== generation ? Effect.void : Effect.gen(function*() {
          open = true
          attempts = 0
          unreachable.clear()
          interactive = false
          codes.clear()
          pairingCode.end()
          phoneNumber = jidToE164(auth?.state.creds.me?.id) ?? null
          yield* move({ _tag: "Opened" })
          // the group chats the number is in, read once the link is open
          const s = socket
          if (s) yield* Effect.forkIn(groupChats.syncAll(s), connectionScope)
        })
      case "SocketClosed":
        return command.generation !== generation ? Effect.void : onClosed(command.code, command.failure)
      case "SocketReceipts":
        return command.generation !== generation
          ? Effect.void
          : Effect.flatMap(Clock.currentTimeMillis, (now) => receipts.report(command.items, now))
      case "SocketRejected":
        return command.generation !== generation ? Effect.void : receipts.rejected(command.id, command.error)
      case "SendThrottled":
        // rate-overlimit on a send: the channel's sends pause (the Channel entity's back-off)
        return signals.restricted("rate_limited")
      case "SocketRestriction":
        return command.generation !== generation ? Effect.void : signals.reported(command.timelock, command.capping)
      case "SocketUpsert":
        return command.generation !== generation ? Effect.void : inbound.upsert(command.messages)
      case "SocketGroupsChanged":
        return command.generation !== generation || !socket
          ? Effect.void
          : Effect.asVoid(Effect.forkIn(groupChats.refresh(socket, command.jids), connectionScope))
      case "SocketCalls":
        return command.generation !== generation ? Effect.void : calls.handle(command.calls)
      case "SocketLidMapping":
        return command.generation !== generation ? Effect.void : Effect.suspend(() => {
          const sender = senderOf({ remoteJid: command.lid, remoteJidAlt: command.pn })
          return inbound.mapping(sender?.whatsappLid ?? null, sender?.phoneNumber ?? null)
        })
      case "PairingCodeRefused":
        // WhatsApp does not link this number: the session ends, nothing to retry
        return command.generation !== generation ? Effect.void : Effect.gen(function*() {
          yield* closeSocket
          pairingCode.end()
          yield* move({ _tag: "PairingCodeRefused" })
        })
      case "ReconnectDue":
        return command.generation !== generation ? Effect.void : Effect.suspend(() => {
          reconnect = undefined
          return openSocket
        })
    }
  }

  yield* Queue.take(commands).pipe(
    Effect.flatMap((command) =>
      handle(command).pipe(Effect.catchAllCause((cause) => Effect.logError("qr connection command failed", cause)))
    ),
    Effect.forever,
    Effect.annotateLogs(annotations),
    Effect.forkScoped
  )
  // the scope ends the socket; the link stays stored, so a later owner resumes it
  yield* Effect.addFinalizer(() => closeSocket)
  // this connection counts in its status until it ends (`move` moves it between statuses)
  yield* status.counted

  const input = QrSocket.inputHold({ socket: () => socket, annotations })
  /** Runs a command on the actor and waits for its answer. */
  const ask = <A>(command: (done: (a: A) => Effect.Effect<void>) => Command) =>
    Effect.gen(function*() {
      const answer = yield* Deferred.make<A>()
      yield* Queue.offer(commands, command((a) => Effect.asVoid(Deferred.succeed(answer, a))))
      return yield* Deferred.await(answer)
    })

  const outbound = QrOutbound.make({
    channelId,
    link,
    publish,
    throttled: Queue.offer(commands, { _tag: "SendThrottled" }).pipe(Effect.asVoid),
    queryTimeout: config.queryTimeout,
    typingIndicator: config.typingIndicator
  })

  return {
    channelId,
    capabilities: qrCapabilities,
    snapshot: Effect.sync(() => ({
      channelId,
      status: status.current(),
      phoneNumber,
      qr: codes.showing() ?? pairingCode.showing(),
      connectionError: unreachable.error()
    })),
    subscribe: PubSub.subscribe(events),
    events: Stream.fromPubSub(events),
    start: ask<void>((done) => ({ _tag: "Start", done: done(undefined) })),
    startWithCode: (number) => ask<void>((done) => ({ _tag: "Start", done: done(undefined), phoneNumber: number })),
    resume: ask<boolean>((done) => ({ _tag: "Resume", done })),
    send: outbound.send,
    logout: ask<void>((done) => ({ _tag: "Logout", done: done(undefined) })),
    markRead: QrReceipts.markRead({ channelId, link, queryTimeout: config.queryTimeout }),
    rejectCall: QrCalls.rejectCall({ channelId, link, queryTimeout: config.queryTimeout }),
    reupload: outbound.reupload,
    holdInput: input.hold,
    resumeInput: input.resume
  } satisfies QrConnection
})
