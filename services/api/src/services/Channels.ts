/** Channel use-cases. */

import { ChannelsRepo, DispatchQueueRepo, EventsRepo, Transactions } from "@switchboard/db"
import { ChannelStateMachine, Errors, Events, Ids, Messaging, Pagination, Schemas } from "@switchboard/domain"
import { ChannelProtocol, MessageProtocol } from "@switchboard/entities/protocol"
import { Clock, Effect, Option } from "effect"
import { Entitlements } from "./Entitlements.js"

const nameTaken = () =>
  new Errors.Conflict({
    message: "A channel with that name already exists in this workspace",
    details: { reason: "name_taken", field: "name" }
  })

const notFound = (id: string) =>
  new Errors.ChannelNotFound({ message: `No channel ${id} in this workspace`, details: { resource: "channel", id } })

export class Channels extends Effect.Service<Channels>()("@switchboard/service-api/Channels", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const repo = yield* ChannelsRepo.ChannelsRepo
    const queue = yield* DispatchQueueRepo.DispatchQueueRepo
    const events = yield* EventsRepo.EventsRepo
    const entitlements = yield* Entitlements
    const messageClient = yield* MessageProtocol.MessageEntity.client
    const channelClient = yield* ChannelProtocol.ChannelEntity.client
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

    /**
     * Inserts a channel (inside the caller's transaction) and its `channel.created` event; it is
     * the workspace default when the workspace has none.
     */
    const insert = Effect.fn("Channels.insert")(function*(input: {
      readonly workspaceId: string
      readonly name: string
      readonly provider: Messaging.Provider
      readonly status: ChannelStateMachine.ChannelStatus
      readonly phoneNumber: string | null
      readonly withCapabilities: boolean
    }) {
      const id = yield* Ids.newId("ch")
      const at = yield* now
      const hasDefault = Option.isSome(yield* repo.findDefault(input.workspaceId))
      yield* repo.insert({
        id,
        workspaceId: input.workspaceId,
        name: input.name,
        provider: input.provider,
        status: input.status,
        isDefault: !hasDefault,
        phoneNumber: input.phoneNumber,
        capabilities: input.withCapabilities
          ? {
            max_throughput_mps: Messaging.THROUGHPUT_MPS[input.provider],
            message_types: Messaging.MESSAGE_TYPES[input.provider]
          }
          : null,
        now: at
      }).pipe(Effect.catchTag("UniqueViolation", nameTaken))
      yield* events.append({
        workspaceId: input.workspaceId,
        event: Events.DomainEvent.make("channel.created", {
          object: "channel",
          object_id: id,
          channel_id: id,
          status: input.status,
          from_status: null,
          to_status: input.status,
          reason: "created"
        }),
        occurredAt: at
      })
      return id
    })

    const create = Effect.fn("Channels.create")(
      function*(workspaceId: string, input: { readonly provider: string; readonly name: string }) {
        if (input.provider !== "qr") {
          const message = input.provider === "sandbox"
            ? "Sandbox channels are created by allocating a sandbox session (POST /v1/sandbox/sessions)"
            : input.provider === "cloud"
            ? "The cloud provider has no adapter in this deployment and cannot be created"
            : "Expected provider \"qr\""
          return yield* new Errors.ValidationError({
            message: "Request validation failed",
            details: { reason: "provider_not_creatable", issues: [{ path: ["provider"], message }] }
          })
        }
        return yield* transactions.run(Effect.gen(function*() {
          // a taken name is the request's own mistake: said before the plan's limit (docs/STATE-MACHINES.md "Channels")
          if (yield* repo.nameTaken(workspaceId, input.name)) return yield* nameTaken()
          yield* entitlements.check(workspaceId, "production_channels", yield* repo.countProduction(workspaceId))
          const id = yield* insert({
            workspaceId,
            name: input.name,
            provider: "qr",
            status: "pending",
            phoneNumber: null,
            withCapabilities: false
          })
          return Option.getOrThrow(yield* repo.find(workspaceId, id)).channel
        }))
      }
    )

    const get = Effect.fn("Channels.get")(function*(workspaceId: string, id: string) {
      const found = yield* repo.find(workspaceId, id)
      if (Option.isNone(found)) return yield* notFound(id)
      return found.value
    })

    const list = Effect.fn("Channels.list")(function*(
      workspaceId: string,
      query: {
        readonly limit?: number | undefined
        readonly after?: Pagination.CursorPosition | undefined
        readonly status?: ChannelStateMachine.ChannelStatus | undefined
      }
    ) {
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      return Pagination.toPage(yield* repo.list(workspaceId, query.status, limit, query.after), limit, (c) => c)
    })

    const update = Effect.fn("Channels.update")(function*(
      workspaceId: string,
      id: string,
      changes: {
        readonly name?: string | undefined
        readonly is_default?: true | undefined
        readonly call_policy?: Messaging.CallPolicy | undefined
      }
    ) {
      const current = yield* get(workspaceId, id)
      if (current.channel.status === "archived") {
        return yield* new Errors.Conflict({
          message: "An archived channel cannot be changed",
          details: { reason: "channel_archived" }
        })
      }
      // only a linked device hears calls (docs/QR-CHANNELS.md "Calls")
      if (changes.call_policy !== undefined && current.channel.provider !== "qr") {
        return yield* new Errors.ChannelCapabilityUnavailable({
          message: `Channel ${id} is not a QR channel: it has no call policy`,
          details: { reason: "not_a_qr_channel" }
        })
      }
      const updated = yield* repo.update(
        workspaceId,
        id,
        { name: changes.name, isDefault: changes.is_default, callPolicy: changes.call_policy },
        yield* now
      ).pipe(
        Effect.catchTag("UniqueViolation", () =>
          new Errors.Conflict({
            message: "A channel with that name already exists in this workspace",
            details: { reason: "name_taken", field: "name" }
          }))
      )
      if (Option.isNone(updated)) return yield* notFound(id)
      return updated.value
    })

    /** Archives (repeatable); cancels what was not dispatched yet, through each message's entity. */
    const archive = Effect.fn("Channels.archive")(function*(workspaceId: string, id: string) {
      const current = yield* get(workspaceId, id)
      const move = ChannelStateMachine.transitionChannel(current.channel.status, { _tag: "Archive" })
      if (move._tag === "Moved") {
        const at = yield* now
        yield* transactions.run(Effect.gen(function*() {
          if (yield* repo.archive(id, at)) {
            for (
              const event of Events.channelMoveDomainEvents(current.channel.id, move, current.channel.phone_number)
            ) {
              yield* events.append({ workspaceId, event, occurredAt: at })
            }
          }
        }))
      }
      const undispatched = yield* queue.undispatchedOf(id)
      yield* Effect.forEach(
        undispatched,
        (messageId) =>
          // a lost cancellation is repeated by the sweeper
          messageClient(messageId).Transition({ to: "cancelled", reason: "channel archived" }).pipe(
            Effect.catchAllCause(() => Effect.void)
          ),
        { concurrency: 10, discard: true }
      )
      // the channel's entity drops its provider connection (it also notices on its own)
      yield* channelClient(id).Wake().pipe(Effect.catchAllCause(() => Effect.void))
      return Option.getOrThrow(yield* repo.find(workspaceId, id)).channel
    })

    const capabilities = Effect.fn("Channels.capabilities")(function*(workspaceId: string, id: string) {
      const found = yield* get(workspaceId, id)
      if (Option.isNone(found.capabilities)) {
        return yield* new Errors.ChannelCapabilityUnavailable({
          message: "The provider has not reported this channel's capabilities yet",
          details: { reason: "capabilities_not_refreshed" }
        })
      }
      return found.capabilities.value
    })

    return { insert, create, get, list, update, archive, capabilities } as const
  }),
  dependencies: [
    ChannelsRepo.ChannelsRepo.Default,
    DispatchQueueRepo.DispatchQueueRepo.Default,
    EventsRepo.EventsRepo.Default,
    Transactions.Transactions.Default,
    Entitlements.Default
  ]
}) {}
