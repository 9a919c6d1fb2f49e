/**
 * One entity per channel: owns the provider connection and dispatches the channel's queued
 * messages (the rows ARE the queue) in priority order, FIFO within a priority, at the
 * provider's pace (a token bucket at `max_throughput_mps`). It picks the next message only when
 * a send slot is free, so a message that arrives later with a higher priority goes first.
 * Volatile `Wake` after a commit starts it; the sweeper repeats lost wake-ups.
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { ChannelsRepo, MessagesRepo } from "@switchboard/db"
import type { QueuedMessage } from "@switchboard/db"
import { toTimestamp } from "@switchboard/domain"
import { ProvidersConfig, SandboxProvider } from "@switchboard/providers"
import type { ChannelConnection } from "@switchboard/providers"
import { Clock, Duration, Effect, Option, Queue, Schedule, Stream } from "effect"
import { MessageEntity } from "./MessageEntity.js"

export const Wake = Rpc.make("Wake")

export const ChannelEntity = Entity.make("Channel", [Wake])

/** Dispatch retries (DECISIONS 4): 2 s, 8 s, 32 s before the 1st, 2nd, 3rd retry. */
export const RETRY_DELAYS_MS = [2_000, 8_000, 32_000] as const

export const ChannelEntityLive = ChannelEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const channelId = address.entityId
    const channels = yield* ChannelsRepo
    const messages = yield* MessagesRepo
    const sandbox = yield* SandboxProvider
    const { retryDelayScale } = yield* ProvidersConfig.ProvidersConfig
    const messageClient = yield* MessageEntity.client
    const wake = yield* Queue.sliding<void>(1)

    const transition = (id: string, payload: Parameters<ReturnType<typeof messageClient>["Transition"]>[0]) =>
      messageClient(id).Transition(payload).pipe(
        // a volatile call to a runner that just died can surface as a defect (CLUSTER.md P2)
        Effect.catchAllDefect(Effect.fail),
        Effect.retry({ times: 3, schedule: Schedule.spaced("300 millis") }),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("message transition not delivered").pipe(
            Effect.annotateLogs({ message_id: id, to: payload.to, cause: String(cause) }),
            Effect.as(false)
          )
        )
      )

    const found = yield* channels.findById(channelId)
    const connection: Option.Option<ChannelConnection> = yield* Option.match(found, {
      onNone: () => Effect.succeedNone,
      onSome: ({ channel }) =>
        channel.provider === "sandbox" && channel.status === "connected"
          ? Effect.map(sandbox.connect(channel), Option.some)
          : Effect.succeedNone
    })

    if (Option.isSome(connection)) {
      const conn = connection.value
      yield* conn.receipts.pipe(
        Stream.runForEach((receipt) => transition(receipt.messageId, { to: receipt.status })),
        Effect.forkScoped
      )

      const keepAlive = (on: boolean) =>
        Entity.keepAlive(on).pipe(Effect.provideService(Entity.CurrentAddress, address))

      const dispatch = (message: QueuedMessage) =>
        Effect.gen(function*() {
          if (!(yield* transition(message.id, { to: "dispatching" }))) return
          const result = yield* conn.send({
            id: message.id,
            to: message.to,
            body: message.body,
            attempts: message.attempts
          })
          if (result._tag === "Accepted") {
            yield* transition(message.id, { to: "provider_accepted" })
            return
          }
          const failure = {
            class: result.retryable ? "retryable" : "permanent",
            code: result.code,
            reason: result.reason
          } as const
          if (!result.retryable) {
            yield* transition(message.id, { to: "failed_permanent", failure, reason: result.reason })
            return
          }
          yield* transition(message.id, { to: "failed_retryable", failure, count_attempt: true, reason: result.reason })
          const retry = message.attempts // 0-based index of this retry
          if (retry >= RETRY_DELAYS_MS.length) {
            yield* transition(message.id, {
              to: "failed_permanent",
              failure: { ...failure, class: "permanent" },
              reason: "retries exhausted"
            })
            return
          }
          const now = yield* Clock.currentTimeMillis
          const at = toTimestamp(now + RETRY_DELAYS_MS[retry]! * retryDelayScale)
          yield* transition(message.id, { to: "queued", next_attempt_at: at, reason: `retry ${retry + 1} at ${at}` })
        })

      const intervalMs = 1000 / conn.capabilities.max_throughput_mps
      const loop = Effect.gen(function*() {
        let nextSlot = 0
        let alive = false
        while (true) {
          const pending = yield* messages.nextQueued(channelId, 1)
          if (pending.length === 0) {
            if (alive) {
              alive = false
              yield* keepAlive(false)
            }
            // wait for a wake-up; poll now and then for retries coming due
            yield* Queue.take(wake).pipe(Effect.timeout("1 second"), Effect.ignore)
            continue
          }
          if (!alive) {
            alive = true
            yield* keepAlive(true)
          }
          const now = yield* Clock.currentTimeMillis
          if (nextSlot > now) {
            yield* Effect.sleep(Duration.millis(nextSlot - now))
            continue // re-read the queue: a higher priority may have arrived meanwhile
          }
          nextSlot = Math.max(nextSlot, now) + intervalMs
          yield* dispatch(pending[0]!)
        }
      })
      yield* loop.pipe(
        Effect.catchAllCause((cause) => Effect.logError("channel dispatch loop stopped", cause)),
        Effect.annotateLogs("channel_id", channelId),
        Effect.forkScoped
      )
    }

    return ChannelEntity.of({
      Wake: () => Rpc.fork(Queue.offer(wake, undefined).pipe(Effect.asVoid))
    })
  }),
  { maxIdleTime: "1 minute" }
)
