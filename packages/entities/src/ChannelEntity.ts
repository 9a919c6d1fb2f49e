/**
 * One entity per channel (id = channel id). It owns the channel's provider connection and
 * dispatches the channel's queued messages (the `messages` rows in status `queued` ARE the
 * queue, ARCHITECTURE 3) in priority order, authentication > utility > marketing, FIFO within,
 * through a token bucket at the provider's `max_throughput_mps`.
 *
 * - It pulls due messages in batches; a `Wake` (a send committed, the sweeper) cuts the batch
 *   short at the next send slot so a later, more urgent message goes first.
 * - Each dispatch: the Message entity moves the message to `dispatching` (refused when it was
 *   cancelled meanwhile or the channel stopped dispatching), the provider is called with OUR
 *   message id, and the outcome goes back to the Message entity (`provider_accepted`, or
 *   `DispatchFailed` which re-queues with backoff or fails permanently).
 * - Receipts from the provider go to the Message entity; inbound messages are recorded with
 *   their contact, conversation and `message.received`.
 * - It keeps itself alive (`Entity.keepAlive`) while it has queued messages or receipts under
 *   way; the keep-alive is persisted, so a crashed runner's channel comes back on another one
 *   and carries on from its rows.
 *
 * - Linked-device channels (QR): the connection lives while the channel is neither archived nor
 *   suspended, so pairing runs here too. Status changes the link reports are recorded on the
 *   channel with `channel.connected` / `channel.disconnected` / `channel.requires_repair`, in
 *   order; the entity stays alive while the link is held or being made. Pairing is driven through
 *   `StartPairing` / `LogoutPairing` / `PairingStatus` and watched through `WatchPairing` (the
 *   api node's SSE stream): the QR code travels only on that stream. Dispatch keeps the QR
 *   per-recipient spacing (6 a minute, SPEC 8.5): a recipient at the cap waits, the others go.
 *
 * Wake-ups are volatile; the sweeper repeats the lost ones. No cluster message is persisted per
 * send (CLUSTER.md §6).
 */
import { Entity, Sharding } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { ChannelsRepo, DispatchQueueRepo } from "@switchboard/db"
import type { QueuedMessage } from "@switchboard/db"
import {
  ChannelStatus,
  dispatches,
  E164,
  emptyRecipientSpacing,
  QR_PER_RECIPIENT_WINDOW_MS,
  recipientReadyAt,
  recordRecipientSend,
  toTimestamp
} from "@switchboard/domain"
import type { Channel, RecipientSpacing } from "@switchboard/domain"
import { ChannelProviders, QrPairingFrame } from "@switchboard/providers"
import type {
  ChannelConnection,
  Pairing,
  ProviderEvent,
  QrConnectionEvent,
  StatusChanged
} from "@switchboard/providers"
import {
  Clock,
  Duration,
  Effect,
  ExecutionStrategy,
  Exit,
  Option,
  Queue,
  Schedule,
  Schema,
  Scope,
  Stream
} from "effect"
import { InboundMessages } from "./InboundMessages.js"
import { MessageEntity } from "./MessageEntity.js"

/** Volatile nudge: there may be due work. */
export const Wake = Rpc.make("Wake")

/** Simulated networks only: someone writes to the channel's number. Answers false when the channel cannot simulate it. */
export const SimulateInbound = Rpc.make("SimulateInbound", {
  payload: { from: E164, text: Schema.String },
  success: Schema.Boolean
})

export class ChannelRuntime extends Schema.Class<ChannelRuntime>("ChannelRuntime")({
  connected: Schema.Boolean,
  keep_alive: Schema.Boolean,
  pending_receipts: Schema.Number
}) {}

/** What the entity is doing right now (diagnostics, tests). */
export const Status = Rpc.make("Status", { success: ChannelRuntime })

/** The channel has no pairing here: not a QR channel, or archived or suspended. */
export class PairingUnavailable extends Schema.TaggedError<PairingUnavailable>()("PairingUnavailable", {
  status: Schema.String
}) {}

/** Pairing as the entity sees it now (never the code). `qr_expires_at`: epoch ms. */
export class PairingView extends Schema.Class<PairingView>("PairingView")({
  status: ChannelStatus,
  qr_available: Schema.Boolean,
  qr_expires_at: Schema.NullOr(Schema.Number),
  phone_number: Schema.NullOr(Schema.String)
}) {}

/** `qr/start`: begins or restarts pairing; answers once the new status is recorded. */
export const StartPairing = Rpc.make("StartPairing", { success: PairingView, error: PairingUnavailable })

/** `qr/logout`: unlinks the device and forgets the link. */
export const LogoutPairing = Rpc.make("LogoutPairing", { success: PairingView, error: PairingUnavailable })

/** `qr/status` */
export const PairingStatus = Rpc.make("PairingStatus", { success: PairingView, error: PairingUnavailable })

/** `qr/stream`: a snapshot, then QR codes, status changes and expiry, while the caller listens. */
export const WatchPairing = Rpc.make("WatchPairing", {
  success: QrPairingFrame,
  error: PairingUnavailable,
  stream: true
})

export const ChannelEntity = Entity.make("Channel", [
  Wake,
  SimulateInbound,
  Status,
  StartPairing,
  LogoutPairing,
  PairingStatus,
  WatchPairing
])

/** Due messages read per batch. */
export const DISPATCH_BATCH = 20

/** Retries of a call to a Message entity: about 30 s, enough to outlast a runner failover. */
const MESSAGE_CALL_RETRY = Schedule.exponential("200 millis").pipe(
  Schedule.either(Schedule.spaced("3 seconds")),
  Schedule.upTo("30 seconds")
)

/** Retries of a receipt's report to its Message entity: for as long as the connection lives. */
const RECEIPT_RETRY = Schedule.exponential("200 millis").pipe(Schedule.either(Schedule.spaced("3 seconds")))

/** Receipts and inbound messages handled at once (one slow Message entity does not hold up the rest). */
const EVENT_LANES = 8

type LaneEvent = Exclude<ProviderEvent, StatusChanged>

const laneOf = (event: LaneEvent): number => {
  const key = event._tag === "Receipt" ? event.messageId : event.providerMessageId
  let hash = 0
  for (let i = 0; i < key.length; i++) hash = (hash * 31 + key.charCodeAt(i)) | 0
  return Math.abs(hash) % EVENT_LANES
}

/** How long a loop with something under way (or no connection) waits for a wake-up before it looks again. */
const IDLE_POLL = Duration.seconds(1)

/**
 * How long a connected channel with nothing due (no queued message, no receipt under way, no
 * recipient waiting) waits before it looks at its rows again. Everything that gives it work wakes
 * it (a send, a status change; the sweeper repeats lost wake-ups and wakes due retries), so this
 * is only a backstop, and thousands of idle channels on a runner must not poll the database
 * every second.
 */
const NOTHING_DUE_POLL = Duration.seconds(10)

/** Statuses in which a linked-device channel holds (or is making) its link: the entity stays alive. */
const LINK_HELD: ReadonlyArray<ChannelStatus> = ["connecting", "awaiting_scan", "connected", "degraded"]

/** A provider connection exists for a channel in any status but these. */
const holdsConnection = (status: ChannelStatus) => status !== "archived" && status !== "suspended"

interface Open {
  readonly connection: ChannelConnection
  readonly scope: Scope.CloseableScope
}

interface Connected extends Open {
  /** the channel as read just now */
  readonly channel: Channel
}

export const ChannelEntityLive = ChannelEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const channelId = address.entityId
    const entityScope = yield* Effect.scope
    const inbound = yield* InboundMessages
    const channels = yield* ChannelsRepo
    const queue = yield* DispatchQueueRepo
    const providers = yield* ChannelProviders.ChannelProviders
    const messageClient = yield* MessageEntity.client
    const wake = yield* Queue.sliding<void>(1)
    const sharding = yield* Sharding.Sharding
    /** Completes once this runner shuts down (it stops taking requests at once). */
    const runnerStopping = sharding.isShutdown.pipe(
      Effect.repeat({ until: (stopped) => stopped, schedule: Schedule.spaced("200 millis") })
    )
    const connecting = yield* Effect.makeSemaphore(1)
    let current: Option.Option<Open> = Option.none()
    let keepingAlive = false
    /** QR channels: recent dispatches per recipient (SPEC 8.5 spacing) */
    let spacing: RecipientSpacing = emptyRecipientSpacing

    const keepAlive = (on: boolean) =>
      on === keepingAlive ? Effect.void : Effect.suspend(() => {
        keepingAlive = on
        return Entity.keepAlive(on).pipe(Effect.provideService(Entity.CurrentAddress, address))
      })

    /**
     * A volatile call to a Message entity. One on a runner that just died answers again after the
     * failover (7-10 s, CLUSTER.md §3), so keep trying for a while; such a failure can surface as a
     * defect (P2). Given up, the sweeper repairs what is left.
     */
    const toMessage = <A>(
      id: string,
      call: Effect.Effect<A, unknown>,
      fallback: A,
      retry: Schedule.Schedule<unknown, unknown> = MESSAGE_CALL_RETRY
    ) =>
      call.pipe(
        Effect.catchAllDefect(Effect.fail),
        Effect.retry(retry),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("message entity not reached").pipe(
            Effect.annotateLogs({ message_id: id, cause: String(cause) }),
            Effect.as(fallback)
          )
        )
      )

    const transition = (
      id: string,
      to: "dispatching" | "provider_accepted" | "sent" | "delivered" | "read",
      at?: number
    ) => toMessage(id, messageClient(id).Transition(at === undefined ? { to } : { to, at }), false)

    const onEvent = (channel: Channel) => (event: LaneEvent) =>
      event._tag === "Receipt"
        // a receipt is not given up while the connection lives: a provider may not tell it again
        ? Effect.asVoid(
          toMessage(
            event.messageId,
            messageClient(event.messageId).Transition({ to: event.status, at: event.at }),
            false,
            RECEIPT_RETRY
          )
        )
        : inbound.record({
          workspaceId: channel.workspace_id,
          channelId: channel.id,
          channelNumber: channel.phone_number,
          providerMessageId: event.providerMessageId,
          from: event.from,
          body: event.text,
          now: toTimestamp(event.at)
        }).pipe(
          Effect.retry({ times: 3, schedule: Schedule.exponential("200 millis") }),
          Effect.catchAllCause((cause) => Effect.logError("inbound message not recorded", cause)),
          Effect.asVoid
        )

    const disconnect = Effect.suspend(() => {
      const open = current
      current = Option.none()
      return Option.match(open, {
        onNone: () => Effect.void,
        onSome: ({ scope }) => Scope.close(scope, Exit.void)
      })
    })

    /**
     * An archived channel keeps no link: a linked device is unlinked at WhatsApp (when the link is
     * up) and its stored credentials are wiped. Once per activation; best effort (bounded).
     */
    let retired = false
    const retire = (channel: Channel) =>
      Effect.gen(function*() {
        if (retired) return
        retired = true
        const pairing = Option.flatMap(current, (open) => Option.fromNullable(open.connection.pairing))
        if (Option.isSome(pairing)) yield* pairing.value.logout.pipe(Effect.timeout("15 seconds"), Effect.ignore)
        const forget = Option.flatMap(providers.get(channel.provider), (p) => Option.fromNullable(p.forget))
        if (Option.isSome(forget)) yield* forget.value(channel)
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("archived channel's link not forgotten", cause)))

    /** Records a status change the link reported (in order), then lets the loop look again. */
    const onStatusChanged = (connection: ChannelConnection) => (event: StatusChanged) =>
      Effect.gen(function*() {
        yield* channels.recordProviderStatus({
          id: channelId,
          from: event.from,
          to: event.to,
          reason: event.reason,
          requiresRepair: event.requiresRepair,
          phoneNumber: event.phoneNumber,
          capabilities: connection.capabilities,
          now: toTimestamp(yield* Clock.currentTimeMillis)
        }).pipe(
          Effect.retry({ times: 5, schedule: Schedule.exponential("200 millis") }),
          Effect.catchAllCause((cause) => Effect.logError("channel status not recorded", cause))
        )
        yield* Queue.offer(wake, undefined)
      })

    /**
     * Reads the channel and opens (or closes) the provider connection to match its status.
     * `None` while the channel has no connection (archived, suspended, unknown, no adapter).
     */
    const reconcile = connecting.withPermits(1)(Effect.gen(function*() {
      const found = yield* channels.findById(channelId)
      if (Option.isNone(found) || !holdsConnection(found.value.channel.status)) {
        if (Option.isSome(found) && found.value.channel.status === "archived") yield* retire(found.value.channel)
        yield* disconnect
        return Option.none<Connected>()
      }
      const channel = found.value.channel
      if (Option.isSome(current)) return Option.some<Connected>({ ...current.value, channel })
      const provider = providers.get(channel.provider)
      if (Option.isNone(provider)) return Option.none<Connected>()
      const scope = yield* Scope.fork(entityScope, ExecutionStrategy.sequential)
      const connection = yield* provider.value.connect(channel).pipe(Scope.extend(scope))
      // the capability snapshot comes from the provider once it can send (GET .../capabilities)
      if (dispatches(channel.status)) {
        yield* channels.refreshCapabilities(
          channel.id,
          connection.capabilities,
          toTimestamp(yield* Clock.currentTimeMillis)
        )
      }
      if (connection.pairing !== undefined) {
        const now = yield* Clock.currentTimeMillis
        spacing = emptyRecipientSpacing
        for (const sent of yield* queue.dispatchesSince(channelId, now - QR_PER_RECIPIENT_WINDOW_MS)) {
          spacing = recordRecipientSend(spacing, sent.to, sent.at)
        }
      }
      // events of one message stay in order (one lane each); different messages go in parallel.
      // A lane (queue + fiber) is made on its first event: most channels on a runner sit idle, and
      // eight idle lanes each were most of an idle entity's memory.
      const lanes = new Map<number, Queue.Queue<LaneEvent>>()
      const laneFor = (i: number) =>
        Effect.suspend(() => {
          const existing = lanes.get(i)
          if (existing !== undefined) return Effect.succeed(existing)
          return Effect.gen(function*() {
            const lane = yield* Queue.unbounded<LaneEvent>()
            lanes.set(i, lane)
            yield* Stream.fromQueue(lane).pipe(Stream.runForEach(onEvent(channel)), Effect.forkIn(scope))
            return lane
          })
        })
      // status changes are recorded here, one after the other, in the order reported
      yield* connection.events.pipe(
        Stream.runForEach((event) =>
          event._tag === "StatusChanged"
            ? onStatusChanged(connection)(event)
            : Effect.flatMap(laneFor(laneOf(event)), (lane) => Queue.offer(lane, event))
        ),
        Effect.forkIn(scope)
      )
      current = Option.some({ connection, scope })
      return Option.some<Connected>({ connection, scope, channel })
    }))

    /** `startedAt`: the send slot it took (the timeline shows the pacing exactly). */
    const dispatch = (connection: ChannelConnection, message: QueuedMessage, startedAt: number) =>
      Effect.gen(function*() {
        if (!(yield* transition(message.id, "dispatching", startedAt))) return
        const result = yield* connection.send({ id: message.id, to: message.to, body: message.body })
        if (result._tag === "Accepted") {
          yield* transition(message.id, "provider_accepted")
          return
        }
        yield* toMessage(
          message.id,
          messageClient(message.id).DispatchFailed({
            retryable: result.retryable,
            code: result.code,
            reason: result.reason
          }),
          Option.none()
        )
      }).pipe(Effect.annotateLogs("message_id", message.id))

    const awaitWake = (timeout: Duration.Duration) => Queue.take(wake).pipe(Effect.timeout(timeout), Effect.ignore)

    /** QR spacing: recipients that must wait now, and when the first of them may go again. */
    const waitingRecipients = (now: number) => {
      const waiting: Array<string> = []
      let readyAt = Number.POSITIVE_INFINITY
      for (const recipient of spacing.keys()) {
        const at = recipientReadyAt(spacing, recipient, now)
        if (at > now) {
          waiting.push(recipient)
          readyAt = Math.min(readyAt, at)
        }
      }
      return { waiting, readyAt }
    }

    const loop = Effect.gen(function*() {
      let nextSlot = 0
      while (true) {
        const connected = yield* reconcile
        if (Option.isNone(connected)) {
          yield* keepAlive(false)
          yield* awaitWake(IDLE_POLL)
          continue
        }
        const { channel, connection } = connected.value
        const spaced = connection.pairing !== undefined
        const linkHeld = spaced && LINK_HELD.includes(channel.status)
        if (!dispatches(channel.status)) {
          yield* keepAlive(linkHeld)
          yield* awaitWake(IDLE_POLL)
          continue
        }
        const { waiting, readyAt } = spaced
          ? waitingRecipients(yield* Clock.currentTimeMillis)
          : { waiting: [], readyAt: Number.POSITIVE_INFINITY }
        const batch = yield* queue.nextQueued(channelId, DISPATCH_BATCH, waiting)
        if (batch.length === 0) {
          const underWay = waiting.length > 0 || (yield* connection.pendingReceipts) > 0
          yield* keepAlive(linkHeld || underWay)
          const untilReady = readyAt - (yield* Clock.currentTimeMillis)
          yield* awaitWake(
            Duration.min(underWay ? IDLE_POLL : NOTHING_DUE_POLL, Duration.millis(Math.max(10, untilReady)))
          )
          continue
        }
        yield* keepAlive(true)
        const intervalMs = 1000 / connection.capabilities.max_throughput_mps
        for (const message of batch) {
          const now = yield* Clock.currentTimeMillis
          // a recipient that reached its spacing cap in this batch waits; the others go
          if (spaced && recipientReadyAt(spacing, message.to, now) > now) continue
          // a timer may fire a millisecond before the wall clock reaches the slot: sleep again
          // until it has, so the provider's pace is never exceeded (not even by 1 ms)
          for (let at = now; nextSlot > at; at = yield* Clock.currentTimeMillis) {
            yield* Effect.sleep(Duration.millis(nextSlot - at))
          }
          // something new arrived: it may outrank the rest of this batch
          if (Option.isSome(yield* Queue.poll(wake))) break
          const startedAt = yield* Clock.currentTimeMillis
          nextSlot = startedAt + intervalMs
          if (spaced) spacing = recordRecipientSend(spacing, message.to, startedAt)
          yield* dispatch(connection, message, startedAt)
        }
      }
    })

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

    const viewOf = (p: Pairing) =>
      Effect.map(p.snapshot, (snap) =>
        new PairingView({
          status: snap.status,
          qr_available: snap.qr !== null,
          qr_expires_at: snap.qr?.expiresAt ?? null,
          phone_number: snap.phoneNumber
        }))

    /** Answers once the channel row shows the status the link reached (recorded by the events fiber). */
    const recorded = (p: Pairing) =>
      Effect.gen(function*() {
        const view = yield* viewOf(p)
        yield* channels.findById(channelId).pipe(
          Effect.repeat({
            until: (row) => Option.isNone(row) || row.value.channel.status === view.status,
            schedule: Schedule.spaced("25 millis").pipe(Schedule.upTo("3 seconds"))
          })
        )
        return view
      })

    // connect at activation, so the first request already finds the connection
    yield* reconcile.pipe(Effect.catchAllCause((cause) => Effect.logError("channel connection failed", cause)))
    yield* loop.pipe(
      Effect.tapErrorCause((cause) => Effect.logError("channel dispatch loop failed; restarting", cause)),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.annotateLogs("channel_id", channelId),
      Effect.forkScoped
    )

    return ChannelEntity.of({
      Wake: () => Rpc.fork(Queue.offer(wake, undefined).pipe(Effect.asVoid)),
      SimulateInbound: ({ payload }) =>
        Rpc.fork(Effect.gen(function*() {
          const connected = yield* reconcile.pipe(Effect.orDie)
          if (Option.isNone(connected) || connected.value.connection.simulateInbound === undefined) return false
          yield* connected.value.connection.simulateInbound(payload.from, payload.text)
          return true
        })),
      StartPairing: () =>
        Rpc.fork(Effect.gen(function*() {
          const p = yield* pairing
          yield* channels.markPairingStarted(channelId, toTimestamp(yield* Clock.currentTimeMillis))
          yield* p.start
          return yield* recorded(p)
        })),
      LogoutPairing: () =>
        Rpc.fork(Effect.gen(function*() {
          const p = yield* pairing
          yield* p.logout
          return yield* recorded(p)
        })),
      PairingStatus: () => Rpc.fork(Effect.flatMap(pairing, viewOf)),
      WatchPairing: () =>
        Rpc.fork(Stream.unwrapScoped(Effect.gen(function*() {
          const p = yield* pairing
          // subscribed before the snapshot: nothing falls in between
          const events = yield* p.subscribe
          const snap = yield* p.snapshot
          const first: QrPairingFrame = {
            _tag: "snapshot",
            channelId,
            status: snap.status,
            phoneNumber: snap.phoneNumber,
            qr: snap.qr
          }
          const later: Stream.Stream<QrPairingFrame> = Stream.fromQueue(events).pipe(Stream.filter(
            (e): e is Extract<QrConnectionEvent, { _tag: "qr" | "state" | "expired" }> =>
              e._tag === "qr" || e._tag === "state" || e._tag === "expired"
          ))
          // an open stream is an active request: it would hold the runner's shutdown (15 s)
          return Stream.concat(Stream.succeed(first), later).pipe(Stream.interruptWhen(runnerStopping))
        }))),
      Status: () =>
        Rpc.fork(Effect.gen(function*() {
          const pending = Option.isSome(current) ? yield* current.value.connection.pendingReceipts : 0
          return new ChannelRuntime({
            connected: Option.isSome(current),
            keep_alive: keepingAlive,
            pending_receipts: pending
          })
        }))
    })
  })
  // idle time: the cluster's `entityMaxIdleTime` (ENTITY_MAX_IDLE_TIME, default 1 minute)
)
