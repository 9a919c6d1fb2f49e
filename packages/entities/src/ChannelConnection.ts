/**
 * A Channel entity's provider connection: opened and closed to match the channel's status (a
 * connection exists in any status but archived and suspended), with the link's reports handled in
 * order: status changes recorded on the channel one after the other, and so are the provider's
 * refusals of messages it had taken (failed, or re-queued when retryable), restrictions, LID
 * mappings and recipient-check answers; receipts recorded in the order reported, together with the
 * runner's other channels' (one statement per batch, `ReceiptBatches`); inbound messages recorded
 * in lanes (the events of one message stay in order; different messages go in parallel).
 *
 * Nothing the provider hands over is dropped for a database failure (docs/OPERATING.md "Provider
 * input during a database outage"): every report is taken at once into the channel's in-process
 * queues and recorded with `TransientRetry`'s backoff until Postgres takes it, for as long as the
 * process lives. The runner's `ProviderInputBacklog` counts what waits (gauges, a log line a
 * minute, `/ready`); at `maxWaiting` the channel stops reading from its provider (`holdInput`)
 * until half of it is recorded; when the connection closes (a shutdown), what waits is recorded
 * first, for at most `drainTimeout`.
 *
 * Over 350 lines on purpose: every kind of report the link makes is routed here, in one place,
 * so the order guarantees above can be read side by side (how the reports other than messages
 * and receipts are recorded is `ChannelReports`).
 *
 * An archived channel keeps no link: a linked device is unlinked at WhatsApp (when the link is up)
 * and its stored credentials are wiped, once per activation, best effort.
 */
import { ChannelsRepo, DatabaseUnavailable, TransientRetry } from "@switchboard/db"
import { ChannelStateMachine, type Messaging, Schemas } from "@switchboard/domain"
import { ChannelProvider, ChannelProviders } from "@switchboard/providers"
import { Clock, Duration, Effect, ExecutionStrategy, Exit, Option, Queue, Schedule, Scope, Stream } from "effect"
import { makeChannelMessageMoves } from "./ChannelMessageMoves.js"
import { makeChannelReports } from "./ChannelReports.js"
import { InboundCalls } from "./InboundCalls.js"
import { InboundMessages } from "./InboundMessages.js"
import { perEntity } from "./PerEntity.js"
import { ProviderInputBacklog } from "./ProviderInputBacklog.js"
import * as ProviderInputSpool from "./ProviderInputSpool.js"

/** Inbound messages recorded at once (one slow recording does not hold up the rest). */
const EVENT_LANES = 8

/**
 * An item not recorded this long (ms, seen at the backlog's next sample) waits for the database:
 * the channel starts keeping what it holds in its spool, as it does at once when a recording
 * reports the database unavailable.
 */
const SPOOL_AFTER_MS = 1_000

type LaneEvent = Exclude<
  ChannelProvider.ProviderEvent,
  | ChannelProvider.StatusChanged
  | ChannelProvider.Receipt
  | ChannelProvider.SendRejected
  | ChannelProvider.LidMapped
  | ChannelProvider.RestrictionReported
  | ChannelProvider.RecipientChecked
  | ChannelProvider.GroupChatsReported
>

const laneOf = (event: LaneEvent): number => {
  const key = event.providerMessageId
  let hash = 0
  for (let i = 0; i < key.length; i++) hash = (hash * 31 + key.charCodeAt(i)) | 0
  return Math.abs(hash) % EVENT_LANES
}

/** A defect that is a passing database failure (`DatabaseUnavailable.classify`) as that failure; others stay defects. */
const transientDefect = (defect: unknown): Effect.Effect<never, TransientRetry.DatabaseUnavailable> => {
  const unavailable = DatabaseUnavailable.classify(defect)
  return unavailable === undefined ? Effect.die(defect) : Effect.fail(unavailable)
}

/** A provider connection exists for a channel in any status but these. */
const holdsConnection = (status: ChannelStateMachine.ChannelStatus) => status !== "archived" && status !== "suspended"

export interface Open {
  readonly connection: ChannelProvider.ChannelConnection
  readonly scope: Scope.CloseableScope
}

export interface Connected extends Open {
  /** the channel as read just now */
  readonly channel: Messaging.Channel
}

/**
 * `wake` is offered after each recorded status change (the dispatch loop looks again); `onOpen`
 * runs once a new connection is made, before its events are handled.
 */
export const makeChannelConnection = <E, R>(options: {
  readonly channelId: string
  readonly wake: Queue.Enqueue<void>
  readonly onOpen: (connection: ChannelProvider.ChannelConnection) => Effect.Effect<void, E, R>
}) =>
  Effect.gen(function*() {
    const { channelId, onOpen, wake } = options
    const entityScope = yield* Effect.scope
    const channels = yield* ChannelsRepo.ChannelsRepo
    const inbound = yield* InboundMessages
    const calls = yield* InboundCalls
    const providers = yield* ChannelProviders.ChannelProviders
    const moves = yield* makeChannelMessageMoves
    const backlog = yield* ProviderInputBacklog
    const spoolDir = backlog.config.spoolDir
    /** Where what waits is kept on disk, if anywhere (`ProviderInputSpool`). */
    const spool = spoolDir === undefined ? undefined : ProviderInputSpool.channelSpool(spoolDir, channelId)
    /** What the channel holds, by ticket: the event, and its key in the spool once written there. */
    const holding = new Map<number, { readonly event: ChannelProvider.ProviderEvent; key: number | undefined }>()
    /** Whether what is taken goes to the spool at once: from the first sign of a wait until nothing is held. */
    let spooling = false
    /** What the spool held at this entity's first connection, until handed to one (a failed connect keeps it). */
    let unreplayed: ReadonlyArray<ProviderInputSpool.Spooled> | undefined
    /** Writes what the channel holds and has not spooled yet to its spool; what comes next goes there too. */
    const spoolHeld = Effect.suspend(() => {
      if (spool === undefined) return Effect.void
      spooling = true
      const unspooled = Array.from(holding.values()).filter((h) => h.key === undefined)
      if (unspooled.length === 0) return Effect.void
      return Effect.map(spool.keep(unspooled.map((h) => h.event)), (keys) => {
        keys.forEach((key, i) => {
          unspooled[i]!.key = key
        })
      })
    })
    /** Events taken from the connection and not recorded yet (kept until Postgres takes them). */
    const input = yield* backlog.trackWith((oldestAgeMs) => oldestAgeMs >= SPOOL_AFTER_MS ? spoolHeld : Effect.void)
    const connecting = yield* Effect.makeSemaphore(1)
    let current: Option.Option<Open> = Option.none()
    /** Callers of `withConnection` using it now. */
    let users = 0
    /** When the connection last did something (opened, an event handled, a caller done with it), epoch ms. */
    let lastActivity = 0
    const touch = Effect.map(Clock.currentTimeMillis, (now) => {
      lastActivity = now
    })

    /**
     * Records with the runner's retry policy until Postgres takes it (a transaction whose COMMIT
     * or ROLLBACK lost its connection dies in `@effect/sql`: that is passing too): a `DatabaseUnavailable` is
     * never the end (the first one of an item is logged); anything else is a bug, logged as
     * `what` not recorded.
     */
    const kept = perEntity((what: string) => <E>(record: Effect.Effect<void, E | TransientRetry.DatabaseUnavailable>) =>
      TransientRetry.retryTransient(Effect.catchAllDefect(record, transientDefect), {
        retries: "forever",
        onUnavailable: (error, attempt) =>
          attempt === 1
            ? Effect.zipRight(
              Effect.logWarning(`${what} waits for the database`).pipe(Effect.annotateLogs({ reason: error.reason })),
              spoolHeld
            )
            : Effect.void
      }).pipe(Effect.catchAllCause((cause) => Effect.logError(`${what} not recorded`, cause)))
    )

    /**
     * The channel's own number, the `to` of what it hears: as last read, and as the link reported it
     * (a channel paired after its connection opened learns its number from the pairing's status change).
     */
    let channelNumber: string | null = null

    const onEvent = perEntity(
      (channel: Messaging.Channel, connection: ChannelProvider.ChannelConnection) => (event: LaneEvent) =>
        event._tag === "CallOffered"
          // the call policy (`InboundCalls`); in the call's lane, before its outcome
          ? kept("call")(calls.offered({
            channelId: channel.id,
            connection,
            channelNumber,
            call: event,
            wake: Effect.asVoid(Queue.offer(wake, undefined))
          }))
          : kept("inbound message")(Effect.asVoid(inbound.record({
            workspaceId: channel.workspace_id,
            channelId: channel.id,
            channelNumber: channelNumber ?? channel.phone_number,
            content: ChannelProvider.inboundContent(event),
            now: Schemas.toTimestamp(event.at)
          })))
    )

    const disconnect = Effect.suspend(() => {
      const open = current
      current = Option.none()
      return Option.match(open, {
        onNone: () => Effect.void,
        onSome: ({ scope }) => Scope.close(scope, Exit.void)
      })
    })

    let retired = false
    const retire = perEntity((channel: Messaging.Channel) =>
      Effect.gen(function*() {
        if (retired) return
        retired = true
        const pairing = Option.flatMap(current, (open) => Option.fromNullable(open.connection.pairing))
        if (Option.isSome(pairing)) yield* pairing.value.logout.pipe(Effect.timeout("15 seconds"), Effect.ignore)
        const forget = Option.flatMap(providers.get(channel.provider), (p) => Option.fromNullable(p.forget))
        if (Option.isSome(forget)) yield* forget.value(channel)
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("archived channel's link not forgotten", cause)))
    )

    const { onGroupChats, onLidMapped, onRecipientChecked, onRestriction, onStatusChanged } = yield* makeChannelReports(
      {
        channelId,
        wake,
        kept
      }
    )

    /**
     * Takes the connection's events as they come (never waiting on the database) into queues in
     * `scope`: status changes, refusals, restrictions, LID mappings and recipient checks in one
     * ordered queue; receipts to `ReceiptBatches`; messages in lanes. Each is counted in `input`
     * until recorded; at `maxWaiting` the provider is held (`holdInput`), at half of it resumed.
     */
    const handleEvents = perEntity((
      channel: Messaging.Channel,
      connection: ChannelProvider.ChannelConnection,
      scope: Scope.Scope,
      replayed: ReadonlyArray<ProviderInputSpool.Spooled>
    ) =>
      Effect.gen(function*() {
        const { maxWaiting } = backlog.config
        let held = false
        const bound = Effect.suspend(() => {
          const waiting = input.waiting()
          // held again at every item over the bound: a provider may have dropped and reopened
          // its link meanwhile (which reads again)
          if (waiting >= maxWaiting && connection.holdInput !== undefined) {
            const first = !held
            held = true
            return Effect.zipRight(
              first
                ? Effect.logWarning("channel stops reading from its provider until the database takes what waits")
                  .pipe(Effect.annotateLogs({ waiting }))
                : Effect.void,
              connection.holdInput(`${waiting} items wait for the database`)
            )
          }
          if (held && waiting <= maxWaiting / 2 && connection.resumeInput !== undefined) {
            held = false
            return Effect.zipRight(
              Effect.logInfo("channel reads from its provider again").pipe(Effect.annotateLogs({ waiting })),
              connection.resumeInput
            )
          }
          return Effect.void
        })
        const handled = (ticket: number) =>
          Effect.suspend(() => {
            input.done(ticket)
            const held = holding.get(ticket)
            holding.delete(ticket)
            if (input.waiting() === 0) spooling = false
            return Effect.zipRight(
              held?.key === undefined || spool === undefined ? Effect.void : spool.recorded(held.key),
              Effect.zipRight(bound, touch)
            )
          })

        const ordered = yield* Queue.unbounded<Effect.Effect<void>>()
        yield* Stream.fromQueue(ordered).pipe(Stream.runForEach((record) => record), Effect.forkIn(scope))
        // A lane (queue + fiber) is made on its first event: most channels on a runner sit idle,
        // and eight idle lanes each were most of an idle entity's memory.
        const lanes = new Map<number, Queue.Queue<readonly [LaneEvent, number]>>()
        const laneFor = (i: number) =>
          Effect.suspend(() => {
            const existing = lanes.get(i)
            if (existing !== undefined) return Effect.succeed(existing)
            return Effect.gen(function*() {
              const lane = yield* Queue.unbounded<readonly [LaneEvent, number]>()
              lanes.set(i, lane)
              yield* Stream.fromQueue(lane).pipe(
                Stream.runForEach(([event, ticket]) =>
                  Effect.ensuring(onEvent(channel, connection)(event), handled(ticket))
                ),
                Effect.forkIn(scope)
              )
              return lane
            })
          })
        const inOrder = (ticket: number, record: Effect.Effect<void>) =>
          Queue.offer(ordered, Effect.ensuring(record, handled(ticket)))
        // what the spool kept from before (a runner killed during an outage) comes first, then the link's
        yield* Stream.concat(
          Stream.fromIterable(replayed),
          Stream.map(connection.events, (event) => ({ event, key: undefined }))
        ).pipe(
          Stream.runForEach(({ event, key }) =>
            Effect.gen(function*() {
              const ticket = input.add(yield* Clock.currentTimeMillis)
              holding.set(ticket, { event, key })
              if (spooling && key === undefined) yield* spoolHeld
              // what the link says of its own number counts from now on (an inbound message
              // behind it in a lane is recorded with it), whenever its status is recorded
              if (event._tag === "StatusChanged" && event.phoneNumber !== null) channelNumber = event.phoneNumber
              yield* event._tag === "StatusChanged"
                ? inOrder(ticket, onStatusChanged(connection)(event))
                : event._tag === "RestrictionReported"
                ? inOrder(ticket, onRestriction(event))
                : event._tag === "SendRejected"
                // in order, like status changes: the refusal that restricted the channel is
                // recorded on its message before the next report is handled
                ? inOrder(
                  ticket,
                  kept("provider refusal")(moves.dispatchFailed(event.messageId, {
                    retryable: event.retryable,
                    code: event.code,
                    reason: event.reason
                  }))
                )
                : event._tag === "LidMapped"
                ? inOrder(ticket, onLidMapped(event))
                : event._tag === "RecipientChecked"
                ? inOrder(ticket, onRecipientChecked(event))
                : event._tag === "GroupChatsReported"
                ? inOrder(ticket, onGroupChats(channel)(event))
                : event._tag === "Receipt"
                // written with the runner's other receipts (`ReceiptBatches`, which keeps them too)
                ? moves.receipt(event, handled(ticket))
                : Effect.flatMap(laneFor(laneOf(event)), (lane) => Queue.offer(lane, [event, ticket] as const))
              yield* bound
            })
          ),
          Effect.forkIn(scope)
        )
      })
    )

    /**
     * Until what the channel took is recorded, or `drainTimeout`: run as a connection closes
     * (before its queues stop and its link closes), so a shutdown does not drop what waits.
     */
    const drain = Effect.gen(function*() {
      if (input.waiting() === 0) return
      const waiting = input.waiting()
      // on disk first: a runner that does not get to the end of its drain records them at its next start
      yield* spoolHeld
      yield* Effect.logInfo("recording provider input before the link closes").pipe(Effect.annotateLogs({ waiting }))
      const done = yield* Effect.repeat(Effect.sync(() => input.waiting() === 0), {
        until: (empty) => empty,
        schedule: Schedule.spaced("100 millis")
      }).pipe(Effect.timeoutOption(backlog.config.drainTimeout))
      if (Option.isNone(done)) {
        const spooled = spool === undefined ? 0 : spool.open()
        yield* Effect.logError("provider input not recorded before the link closed").pipe(
          Effect.annotateLogs({
            waiting: input.waiting(),
            // kept in the spool: recorded at the runner's next start of this channel
            spooled,
            lost: Math.max(0, input.waiting() - spooled),
            drain_timeout_s: Duration.toSeconds(backlog.config.drainTimeout)
          })
        )
      }
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
      if (channel.phone_number !== null) channelNumber = channel.phone_number
      if (Option.isSome(current)) return Option.some<Connected>({ ...current.value, channel })
      const provider = providers.get(channel.provider)
      if (Option.isNone(provider)) return Option.none<Connected>()
      // what a runner killed during an outage kept on disk: read before the link opens, handled first
      if (unreplayed === undefined) unreplayed = spool === undefined ? [] : yield* spool.replay
      const replayed = unreplayed
      const scope = yield* Scope.fork(entityScope, ExecutionStrategy.sequential)
      const connection = yield* provider.value.connect(channel).pipe(Scope.extend(scope))
      // the capability snapshot comes from the provider once it can send (GET .../capabilities)
      if (ChannelStateMachine.dispatches(channel.status)) {
        yield* channels.refreshCapabilities(
          channel.id,
          connection.capabilities,
          Schemas.toTimestamp(yield* Clock.currentTimeMillis)
        )
      }
      yield* onOpen(connection)
      yield* touch
      // the queues live in a scope of their own, closed after `drain` (finalizers run last first)
      const work = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      yield* handleEvents(channel, connection, work, replayed)
      unreplayed = []
      yield* Scope.addFinalizer(scope, drain)
      current = Option.some({ connection, scope })
      return Option.some<Connected>({ connection, scope, channel })
    }))

    /** `reconcile`, then `use`; the connection is not closed for idleness meanwhile. */
    const withConnection = perEntity(<A, E2, R2>(
      use: (connected: Option.Option<Connected>) => Effect.Effect<A, E2, R2>
    ) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          users++
        }),
        () => Effect.flatMap(reconcile, use),
        () =>
          Effect.zipRight(
            Effect.sync(() => {
              users--
            }),
            touch
          )
      )
    )

    /**
     * Closes a connection its provider lets go when idle (`dropWhenIdle`: the sandbox) once it has
     * done nothing for `quietMs`: no receipt under way at the provider, no event taken and not yet
     * recorded, nobody in `withConnection`. Answers whether it closed it. Anything that needs the
     * connection again connects again (`reconcile`); a reconnect replays what a provider had under way.
     */
    const closeIfIdle = perEntity((quietMs: number) =>
      connecting.withPermits(1)(Effect.gen(function*() {
        if (Option.isNone(current)) return false
        const { connection } = current.value
        if (connection.dropWhenIdle !== true || input.waiting() > 0 || users > 0) return false
        if ((yield* Clock.currentTimeMillis) - lastActivity < quietMs) return false
        if ((yield* connection.pendingReceipts) > 0) return false
        yield* disconnect
        return true
      }))
    )

    return {
      reconcile,
      withConnection,
      closeIfIdle,
      /** The open connection, if any (without reading the channel). */
      current() {
        return current
      },
      moves
    }
  })

/**
 * Read receipts for inbound messages the business read (`MarkRead`): through the open connection's
 * provider; false when there is none or the provider has no read receipts.
 */
export const sendReadReceipts = (
  connected: Option.Option<Connected>,
  messages: ReadonlyArray<{
    readonly provider_message_id: string
    readonly phone_number: string | null
    readonly whatsapp_lid: string | null
    readonly whatsapp_group_id?: string | undefined
  }>
) =>
  Effect.gen(function*() {
    const markRead = Option.isSome(connected) ? connected.value.connection.markRead : undefined
    if (markRead === undefined) return false
    yield* markRead(messages.map((m) => ({
      providerMessageId: m.provider_message_id,
      phoneNumber: m.phone_number,
      whatsappLid: m.whatsapp_lid,
      ...(m.whatsapp_group_id === undefined ? {} : { whatsappGroupId: m.whatsapp_group_id })
    })))
    return true
  })
