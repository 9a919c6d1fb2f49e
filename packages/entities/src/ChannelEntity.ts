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
 * Wake-ups are volatile; the sweeper repeats the lost ones. No cluster message is persisted per
 * send (CLUSTER.md §6).
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { SqlClient } from "@effect/sql"
import { ChannelsRepo, MessagesRepo } from "@switchboard/db"
import type { QueuedMessage } from "@switchboard/db"
import { dispatches, E164, toTimestamp } from "@switchboard/domain"
import type { Channel } from "@switchboard/domain"
import { ChannelProviders } from "@switchboard/providers"
import type { ChannelConnection, ProviderEvent } from "@switchboard/providers"
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

export const ChannelEntity = Entity.make("Channel", [Wake, SimulateInbound, Status])

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

const laneOf = (event: ProviderEvent): number => {
  const key = event._tag === "Receipt" ? event.messageId : event.providerMessageId
  let hash = 0
  for (let i = 0; i < key.length; i++) hash = (hash * 31 + key.charCodeAt(i)) | 0
  return Math.abs(hash) % EVENT_LANES
}

/** How long an idle loop waits for a wake-up before it looks at its rows again. */
const IDLE_POLL = Duration.seconds(1)

interface Connected {
  readonly channel: Channel
  readonly connection: ChannelConnection
  readonly scope: Scope.CloseableScope
}

export const ChannelEntityLive = ChannelEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const channelId = address.entityId
    const entityScope = yield* Effect.scope
    const sql = yield* SqlClient.SqlClient
    const channels = yield* ChannelsRepo
    const messages = yield* MessagesRepo
    const providers = yield* ChannelProviders.ChannelProviders
    const messageClient = yield* MessageEntity.client
    const wake = yield* Queue.sliding<void>(1)
    const connecting = yield* Effect.makeSemaphore(1)
    let current: Option.Option<Connected> = Option.none()
    let keepingAlive = false

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

    const onEvent = (channel: Channel) => (event: ProviderEvent) =>
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
        : sql.withTransaction(messages.recordInbound({
          workspaceId: channel.workspace_id,
          channelId: channel.id,
          channelNumber: channel.phone_number,
          providerMessageId: event.providerMessageId,
          from: event.from,
          body: event.text,
          now: toTimestamp(event.at)
        })).pipe(
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
     * Reads the channel and opens (or closes) the provider connection to match its status.
     * `None` while the channel cannot dispatch (not connected, archived, unknown, no adapter).
     */
    const reconcile = connecting.withPermits(1)(Effect.gen(function*() {
      const found = yield* channels.findById(channelId)
      if (Option.isNone(found) || !dispatches(found.value.channel.status)) {
        yield* disconnect
        return Option.none<Connected>()
      }
      if (Option.isSome(current)) return current
      const channel = found.value.channel
      const provider = providers.get(channel.provider)
      if (Option.isNone(provider)) return Option.none<Connected>()
      const scope = yield* Scope.fork(entityScope, ExecutionStrategy.sequential)
      const connection = yield* provider.value.connect(channel).pipe(Scope.extend(scope))
      // the capability snapshot comes from the provider (GET .../capabilities shows it)
      yield* channels.refreshCapabilities(
        channel.id,
        connection.capabilities,
        toTimestamp(yield* Clock.currentTimeMillis)
      )
      // events of one message stay in order (one lane each); different messages go in parallel
      const lanes = yield* Effect.forEach(Array.from({ length: EVENT_LANES }), () => Queue.unbounded<ProviderEvent>())
      for (const lane of lanes) {
        yield* Stream.fromQueue(lane).pipe(Stream.runForEach(onEvent(channel)), Effect.forkIn(scope))
      }
      yield* connection.events.pipe(
        Stream.runForEach((event) => Queue.offer(lanes[laneOf(event)]!, event)),
        Effect.forkIn(scope)
      )
      current = Option.some({ channel, connection, scope })
      return current
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

    const loop = Effect.gen(function*() {
      let nextSlot = 0
      while (true) {
        const connected = yield* reconcile
        if (Option.isNone(connected)) {
          yield* keepAlive(false)
          yield* awaitWake(IDLE_POLL)
          continue
        }
        const { connection } = connected.value
        const batch = yield* messages.nextQueued(channelId, DISPATCH_BATCH)
        if (batch.length === 0) {
          yield* keepAlive((yield* connection.pendingReceipts) > 0)
          yield* awaitWake(IDLE_POLL)
          continue
        }
        yield* keepAlive(true)
        const intervalMs = 1000 / connection.capabilities.max_throughput_mps
        for (const message of batch) {
          const now = yield* Clock.currentTimeMillis
          if (nextSlot > now) yield* Effect.sleep(Duration.millis(nextSlot - now))
          // something new arrived: it may outrank the rest of this batch
          if (Option.isSome(yield* Queue.poll(wake))) break
          const startedAt = yield* Clock.currentTimeMillis
          nextSlot = startedAt + intervalMs
          yield* dispatch(connection, message, startedAt)
        }
      }
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
  }),
  { maxIdleTime: "1 minute" }
)
