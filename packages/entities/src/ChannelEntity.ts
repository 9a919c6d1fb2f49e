/**
 * One entity per channel (id = channel id): the live handlers of the Channel protocol
 * (`ChannelProtocol.ts`). It owns the channel's provider connection (`ChannelConnection.ts`) and
 * dispatches the channel's queued messages (the `messages` rows in status `queued` ARE the queue)
 * in priority order, authentication > utility > marketing, FIFO within, paced by the domain's
 * `ChannelPacer`: one send slot per `1 / max_throughput_mps` seconds and, on linked-device (QR)
 * channels, the per-recipient spacing (README, QR channels): a recipient at the cap waits, the
 * others go.
 *
 * Over 350 lines on purpose: the handlers share one closure (the connection, the pacer, the
 * wakers); what can stand alone lives in `ChannelConnection.ts` and `ChannelPairing.ts`.
 *
 * - It pulls due messages in batches; a `Wake` (a send committed, the sweeper) cuts the batch
 *   short while it waits for the next send slot, so a later, more urgent message takes that slot. A wake-up can come
 *   too late for that (it races the slot being taken), so the move to `dispatching` itself is
 *   refused while a more urgent message of the channel is due (recipients waiting for their
 *   spacing excepted); a refused dispatch gives its slot back and the queue is read again.
 * - Each dispatch: this entity moves the message to `dispatching` itself, in process and in one
 *   statement with the runner's other channels' takes (`ChannelMessageMoves`,
 *   `MessageMoves.takeForDispatch`; the writer rule: docs/ARCHITECTURE.md "One writer per message, by statement"), refused when it was
 *   cancelled meanwhile, the channel stopped dispatching, or it is outranked; the provider is called with OUR
 *   message id, and the outcome is recorded the same way (`provider_accepted`, with the runner's
 *   receipts in one statement for many channels, `ReceiptBatches`; or a dispatch failure which
 *   re-queues with backoff or fails permanently).
 * - It keeps itself alive (`Entity.keepAlive`) while it has queued messages or receipts under
 *   way, or (QR) while the link is held or being made; the keep-alive is persisted, so a crashed
 *   runner's channel comes back on another one and carries on from its rows.
 * - Pairing (QR) is driven through the handlers in `ChannelPairing.ts`.
 * - Idle channels cost little: a connection its provider lets go (`dropWhenIdle`: the sandbox) is
 *   closed after `ConnectionIdleTime` with nothing to do, and the dispatch loop then ends; the
 *   next `Wake` (or `SimulateInbound`, or a pairing call) connects again and restarts the loop.
 *   What stays is the entity itself, until the cluster passivates it (`ENTITY_MAX_IDLE_TIME`).
 *   Linked-device (QR) channels keep their link and their loop.
 *
 * Wake-ups are volatile; the sweeper repeats the lost ones. No cluster message is persisted per
 * send.
 *
 * Tracing (infra `Tracing`): a send's `Wake` names its message; the message's dispatch span
 * (`Channel.dispatch`) is then a child of that wake-up, so one trace runs from the HTTP request
 * to the provider. A dispatch nobody woke for (the sweeper, a retry) starts a trace of its own.
 */
import { Entity, Sharding } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { ChannelsRepo, DispatchQueueRepo } from "@switchboard/db"
import { ChannelIdle, ChannelStateMachine, Pacer, QrSafetyWindow } from "@switchboard/domain"
import { ChannelProvider } from "@switchboard/providers"
import { Clock, Context, Duration, Effect, Layer, Option, Queue, Random, Schedule } from "effect"
import type { Tracer } from "effect"
import { makeChannelConnection, sendReadReceipts } from "./ChannelConnection.js"
import { makePairingHandlers } from "./ChannelPairing.js"
import { ChannelEntity, ChannelRuntime } from "./ChannelProtocol.js"
import { makeChannelThrottle } from "./ChannelThrottle.js"
import * as Loops from "./Loops.js"
import { perEntity } from "./PerEntity.js"
import * as ProviderInputBacklog from "./ProviderInputBacklog.js"

/** Due messages read per batch. */
export const DISPATCH_BATCH = 20

/** How long a loop with something under way (or no connection) waits for a wake-up before it looks again. */
const IDLE_POLL = Duration.millis(ChannelIdle.UNDER_WAY_POLL_MS)

/**
 * How long a connection its provider lets go when idle (`dropWhenIdle`: the sandbox) stays open
 * with nothing to do: no queued message due, no receipt under way, no event being handled. Then
 * the entity closes it and its dispatch loop ends; the entity holds neither a connection nor a
 * fiber until its next work (a `Wake`, `SimulateInbound`) connects again. Tests shorten it.
 */
export class ConnectionIdleTime extends Context.Reference<ConnectionIdleTime>()(
  "@switchboard/entities/ConnectionIdleTime",
  { defaultValue: (): Duration.Duration => Duration.seconds(10) }
) {}

/** Wake-up spans kept for messages not dispatched yet (the oldest are dropped first). */
const MAX_WAKERS = 1000

/** Statuses in which a linked-device channel holds (or is making) its link: the entity stays alive. */
const LINK_HELD: ReadonlyArray<ChannelStateMachine.ChannelStatus> = [
  "connecting",
  "awaiting_scan",
  "connected",
  "degraded"
]

/**
 * Completes once this runner shuts down (it stops taking requests at once). Read when run, not
 * when the entity is built: `Entity.makeTestClient`'s sharding (TestClock entity tests) has no `isShutdown`.
 */
const runnerStopping = (sharding: Sharding.Sharding["Type"]) =>
  Effect.suspend(() => sharding.isShutdown).pipe(
    Effect.repeat({ until: (stopped) => stopped, schedule: Schedule.spaced("200 millis") })
  )

// Every Channel entity of a runner stays in memory while the cluster keeps it live (10,000 and
// more on one runner, most of them idle): what it makes up front is paid once per channel. So
// schedules and helpers that need no channel live here, shared, and what only some channels use
// (wake-up spans, the pairing handlers) is made on first use (bench/RESULTS.md 4e).

export const ChannelEntityLive = ChannelEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const channelId = address.entityId
    const queue = yield* DispatchQueueRepo.DispatchQueueRepo
    const wake = yield* Queue.sliding<void>(1)
    const sharding = yield* Sharding.Sharding
    const channels = yield* ChannelsRepo.ChannelsRepo
    /**
     * Whether it keeps itself alive; `undefined` until its first decision. A new instance cannot
     * know whether a keep-alive of an earlier one is outstanding: the request is persisted and
     * delivered again to the instance on the runner that took the shard over (or after a restart),
     * where the cluster answers it only once the entity releases it. So the first decision is
     * always applied, releasing (or renewing) what an earlier instance left; otherwise an idle
     * channel that came over with a keep-alive is never passivated.
     */
    let keepingAlive: boolean | undefined = undefined
    let pacer: Pacer.ChannelPacer = Pacer.idlePacer

    const keepAlive = perEntity((on: boolean) =>
      on === keepingAlive ? Effect.void : Effect.suspend(() => {
        keepingAlive = on
        return Entity.keepAlive(on).pipe(Effect.provideService(Entity.CurrentAddress, address))
      })
    )

    /** A new connection: QR channels rebuild their per-recipient spacing from the recorded dispatches. */
    const onOpen = perEntity((connection: ChannelProvider.ChannelConnection) =>
      Effect.gen(function*() {
        const perRecipient = connection.pairing !== undefined
        const since = (yield* Clock.currentTimeMillis) - QrSafetyWindow.QR_PER_RECIPIENT_WINDOW_MS
        const recent = perRecipient ? yield* queue.dispatchesSince(channelId, since) : []
        pacer = Pacer.pacerForConnection(pacer, perRecipient, recent)
      })
    )

    const link = yield* makeChannelConnection({ channelId, wake, onOpen })
    const { moves, reconcile } = link
    const idleMs = Duration.toMillis(yield* ConnectionIdleTime)

    const awaitWake = perEntity((timeout: Duration.Duration) =>
      Queue.take(wake).pipe(Effect.timeout(timeout), Effect.ignore)
    )

    /**
     * The recorded span of the wake-up each message's send sent, until its dispatch (tracing on);
     * made on the first sampled wake-up.
     */
    let wakers: Map<string, Tracer.AnySpan> | undefined
    const rememberWaker = perEntity((messageId: string) =>
      Effect.map(Effect.option(Effect.currentParentSpan), (span) => {
        if (Option.isNone(span) || !span.value.sampled) return
        wakers ??= new Map()
        if (wakers.size >= MAX_WAKERS) wakers.delete(wakers.keys().next().value!)
        wakers.set(messageId, span.value)
      })
    )
    const takeWaker = perEntity((messageId: string) => {
      if (wakers === undefined) return undefined
      const span = wakers.get(messageId)
      wakers.delete(messageId)
      return span
    })

    /** Throttled by the provider: no send of the channel goes out for a growing pause (`ChannelThrottle`). */
    const throttle = yield* makeChannelThrottle
    /** the pause's end: the loop looks again then, for the messages that wait for it */
    let pausedUntil = 0
    const throttled = perEntity((id: string, refusal: { code: string; reason: string }) =>
      Effect.gen(function*() {
        const outcome = yield* throttle.throttled
        if (outcome._tag === "GiveUp") return yield* moves.dispatchFailed(id, outcome.failure)
        pacer = Pacer.pauseUntil(pacer, outcome.until)
        pausedUntil = outcome.until
        yield* Effect.logWarning("provider throttled the channel: its sends pause", { pause_ms: outcome.pauseMs })
        yield* moves.throttled(id, refusal, outcome.until)
      })
    )

    /**
     * `startedAt`: the send slot it took (the timeline shows the pacing exactly); `waiting`: the
     * recipients that must wait for their spacing then. Answers false when the message was not
     * taken (nothing went to the provider).
     */
    const dispatch = perEntity((
      connection: ChannelProvider.ChannelConnection,
      message: DispatchQueueRepo.QueuedMessage,
      startedAt: number,
      waiting: ReadonlyArray<string>
    ) =>
      Effect.suspend(() => {
        const waker = takeWaker(message.id)
        return Effect.gen(function*() {
          if (!(yield* moves.dispatching(message.id, startedAt, waiting))) {
            // not taken now: its dispatch later still belongs to the send's trace
            if (waker !== undefined) (wakers ??= new Map()).set(message.id, waker)
            return false
          }
          // the queued message is what the provider sends: text, file, location, reaction, quote
          // (its span is the provider's call in the dispatch's trace: the take, the acceptance and
          // the sandbox network's record of the offer are statements the runner's channels share)
          const result = yield* connection.send(message).pipe(
            Effect.withSpan("ChannelProvider.send", { captureStackTrace: false })
          )
          if (result._tag === "Accepted") throttle.accepted()
          yield* result._tag === "Accepted"
            ? moves.providerAccepted(message.id)
            : result.code === ChannelProvider.PROVIDER_RATE_LIMITED
            ? throttled(message.id, result)
            : moves.dispatchFailed(message.id, result)
          return true
        }).pipe(
          // a dispatch once taken runs to its end (the provider's answer recorded) before the entity
          // stops: a shard handover interrupting it between the take and the provider's call left
          // the message `dispatching` until the sweeper's stuck limit (45 s), then sent it again
          Effect.uninterruptible,
          Effect.annotateLogs("message_id", message.id),
          Effect.withSpan("Channel.dispatch", {
            ...(waker === undefined ? { root: true } : { parent: waker }),
            captureStackTrace: false,
            attributes: { "channel.id": channelId, "message.id": message.id }
          })
        )
      })
    )

    /**
     * Waits until the send slot opens, or until something new arrives (a `Wake`): true then, and
     * the caller reads the queue again while the slot is still closed, so a more urgent message
     * takes this very slot and nothing is dispatched late for the read. A timer may fire a
     * millisecond before the wall clock reaches the slot: it waits again until it has, so the
     * provider's pace is never exceeded (not even by 1 ms).
     */
    const awaitSendSlotOrWake = Effect.gen(function*() {
      let wait = Pacer.sendSlotWaitMs(pacer, yield* Clock.currentTimeMillis)
      while (wait > 0) {
        if (Option.isSome(yield* Effect.option(Effect.timeout(Queue.take(wake), Duration.millis(wait))))) return true
        wait = Pacer.sendSlotWaitMs(pacer, yield* Clock.currentTimeMillis)
      }
      return Option.isSome(yield* Queue.poll(wake))
    })

    /** Sends a batch in order, one per send slot; something new arriving cuts it short. */
    const dispatchBatch = perEntity((
      connection: ChannelProvider.ChannelConnection,
      batch: ReadonlyArray<DispatchQueueRepo.QueuedMessage>
    ) =>
      Effect.gen(function*() {
        let fresh = true
        for (const message of batch) {
          // a recipient that reached its spacing cap in this batch waits; the others go
          if (Pacer.recipientMustWait(pacer, message.to, yield* Clock.currentTimeMillis)) continue
          // something new arrived: it may outrank the rest of this batch
          if (yield* awaitSendSlotOrWake) return
          const startedAt = yield* Clock.currentTimeMillis
          const before = pacer
          const { waiting } = Pacer.waitingRecipients(pacer, startedAt)
          const mps = connection.capabilities.max_throughput_mps
          pacer = Pacer.takeSendSlot(pacer, message.to, startedAt, mps, yield* Random.next)
          if (!(yield* dispatch(connection, message, startedAt, waiting))) {
            // refused: cancelled meanwhile, the channel stopped dispatching, or a more urgent
            // message is due (committed after this batch was read, its wake-up too late for the
            // check above). Nothing went out, so the slot is still free: read the queue again. The
            // first of a fresh read keeps the slot taken, so a refusal the read cannot explain is
            // retried once per slot, never in a tight loop.
            if (!fresh) pacer = before
            return
          }
          fresh = false
        }
      })
    )

    /**
     * Whether the loop runs. It ends once a droppable connection was closed for idleness; whatever
     * brings work (a `Wake`, a caller that connects) starts it again (`ensureLoop`). It ends only
     * when no wake-up is waiting, decided in one step, and `Wake` offers its wake-up before it
     * looks here: a wake-up finds the loop running or starts it.
     */
    let looping = false
    const endUnlessWoken = Effect.sync(() => {
      if (Option.getOrElse(wake.unsafeSize(), () => 0) > 0) return false
      looping = false
      return true
    })

    const loop = Effect.gen(function*() {
      // the wake-up that started it is answered by the read below
      yield* Queue.takeAll(wake)
      while (true) {
        const connected = yield* reconcile
        if (Option.isNone(connected)) {
          yield* keepAlive(false)
          yield* awaitWake(IDLE_POLL)
          continue
        }
        const { channel, connection } = connected.value
        const linkHeld = connection.pairing !== undefined && LINK_HELD.includes(channel.status)
        if (!ChannelStateMachine.dispatches(channel.status)) {
          yield* keepAlive(linkHeld)
          yield* awaitWake(IDLE_POLL)
          continue
        }
        const readAt = yield* Clock.currentTimeMillis
        const { readyAt, waiting } = Pacer.waitingRecipients(pacer, readAt)
        const batch = yield* queue.nextQueued(channelId, DISPATCH_BATCH, waiting)
        if (batch.length === 0) {
          // the decisions are the domain's (`ChannelIdle.ts`); this carries them out
          const underWay = waiting.length > 0 || (yield* connection.pendingReceipts) > 0
          const { keepAlive: alive, mayClose } = ChannelIdle.nothingDue({
            underWay,
            linkHeld,
            dropWhenIdle: connection.dropWhenIdle === true
          })
          yield* keepAlive(alive)
          // nothing to do for a while: no connection and no loop until the next work
          if (mayClose && (yield* link.closeIfIdle(idleMs)) && (yield* endUnlessWoken)) return
          // (a message waiting for the channel's pause, throttled, is due when the pause ends)
          const waitMs = ChannelIdle.nothingDueWaitMs(
            { underWay, mayClose, idleMs, readyAt, pausedUntil, readAt },
            yield* Clock.currentTimeMillis
          )
          yield* awaitWake(Duration.millis(waitMs))
          continue
        }
        yield* keepAlive(true)
        yield* dispatchBatch(connection, batch)
      }
    })

    const entityScope = yield* Effect.scope
    // started from a request, the loop must not run inside that request's span
    const entityContext = yield* Effect.context<Sharding.Sharding>()
    // restarted after any failure or defect, with the runner's backoff (`Loops`)
    const runLoop = Loops.supervised("channel dispatch loop", loop).pipe(
      Effect.annotateLogs("channel_id", channelId),
      Effect.mapInputContext((_: Context.Context<never>) => entityContext)
    )
    /**
     * Which loop is the current one: a loop that ended (interrupted, or ended by itself) lets a
     * later wake-up start another, unless a newer one already runs (`endUnlessWoken` ended it and
     * a wake-up started the next before this one's exit was seen).
     */
    let loopGeneration = 0
    const ensureLoop = Effect.suspend(() => {
      if (looping) return Effect.void
      looping = true
      const generation = ++loopGeneration
      return Effect.asVoid(Effect.forkIn(
        runLoop.pipe(Effect.onExit(() =>
          Effect.sync(() => {
            if (generation === loopGeneration) looping = false
          })
        )),
        entityScope
      ))
    })
    /** The channel's connection for a request (connecting first if needed), with the loop running to close it when idle. */
    const connectAndLoop = Effect.tap(reconcile, () => ensureLoop)

    /** The pairing handlers, made on the channel's first pairing call. */
    const makePairing = perEntity(() =>
      makePairingHandlers({ channelId, channels, reconcile: connectAndLoop, runnerStopping: runnerStopping(sharding) })
    )
    let pairingHandlers: ReturnType<typeof makePairing> | undefined
    const pairing = perEntity(() => pairingHandlers ??= makePairing())

    // connect at activation, so the first request already finds the connection
    yield* reconcile.pipe(Effect.catchAllCause((cause) => Effect.logError("channel connection failed", cause)))
    yield* ensureLoop

    return ChannelEntity.of({
      // methods, not `Wake: () => ...`: see `perEntity`
      StartPairing(envelope) {
        return pairing().StartPairing(envelope.payload)
      },
      LogoutPairing() {
        return pairing().LogoutPairing()
      },
      PairingStatus() {
        return pairing().PairingStatus()
      },
      WatchPairing() {
        return pairing().WatchPairing()
      },
      Wake({ payload }) {
        return Rpc.fork(
          (payload === undefined ? Effect.void : rememberWaker(payload.message_id)).pipe(
            Effect.zipRight(Queue.offer(wake, undefined)),
            Effect.zipRight(ensureLoop)
          )
        )
      },
      SimulateInbound({ payload }) {
        return Rpc.fork(
          link.withConnection((connected) =>
            Effect.gen(function*() {
              if (Option.isNone(connected) || connected.value.connection.simulateInbound === undefined) return false
              yield* connected.value.connection.simulateInbound({
                from: payload.from,
                body: payload.body,
                quotedProviderMessageId: payload.quoted_provider_message_id,
                ...(payload.group_chat === undefined ? {} : { groupChat: payload.group_chat }),
                ...(payload.mentions === undefined ? {} : { mentions: payload.mentions }),
                ...(payload.provider_message_id === undefined ? {} : { providerMessageId: payload.provider_message_id })
              })
              return true
            })
          ).pipe(Effect.orDie, Effect.tap(ensureLoop))
        )
      },
      MarkRead({ payload }) {
        return Rpc.fork(Effect.orDie(Effect.zipRight(
          Effect.ignore(connectAndLoop),
          link.withConnection((connected) => sendReadReceipts(connected, payload.messages))
        )))
      },
      Status() {
        return Rpc.fork(Effect.gen(function*() {
          const current = link.current()
          const pending = Option.isSome(current) ? yield* current.value.connection.pendingReceipts : 0
          return new ChannelRuntime({
            connected: Option.isSome(current),
            keep_alive: keepingAlive === true,
            pending_receipts: pending
          })
        }))
      }
    })
  })
  // idle time: the cluster's `entityMaxIdleTime` (ENTITY_MAX_IDLE_TIME, default 1 minute)
).pipe(
  // one per runner: the same layer value, built once where the runner also reads it (`/ready`)
  Layer.provide(ProviderInputBacklog.layer)
)
