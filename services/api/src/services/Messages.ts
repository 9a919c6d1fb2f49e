/**
 * The send path: the Idempotency-Key's claim (its own commit), the checks (one statement), then
 * the writes in ONE statement (`SendWritesRepo`: contact, conversation, message `queued`,
 * timeline, events with their webhook deliveries, stored idempotent response), on its own or
 * inside a transaction of its own when a lock must come first (a QR channel, a monthly quota), then a volatile
 * wake-up of the channel's entity. Reads go straight to Postgres. A file the checks fetched from
 * a URL is removed again when the write refuses the send (`SendContents.discard`).
 */
import type { Security } from "@switchboard/api"
import {
  ChannelsRepo,
  GroupChatsRepo,
  MessagesRepo,
  RetentionSettings,
  SendChecksRepo,
  SendWritesRepo,
  Transactions
} from "@switchboard/db"
import {
  ChannelStateMachine,
  Errors,
  GroupChats,
  Ids,
  MessageCategory,
  type MessageStateMachine,
  Messaging,
  Pagination,
  Plans,
  Schemas,
  SendCapability
} from "@switchboard/domain"
import { ChannelProtocol } from "@switchboard/entities/protocol"
import { SandboxNumbers } from "@switchboard/providers/contract"
import { Clock, Effect, Option } from "effect"
import * as SendMetrics from "../SendMetrics.js"
import { enforcedLimit, refuseBeyond } from "./Entitlements.js"
import { type HeldClaim, Idempotency } from "./Idempotency.js"
import { MessageQuota } from "./MessageQuota.js"
import { QrSafety } from "./QrSafety.js"
import { SendContents } from "./SendContents.js"
import { TemplateSends } from "./TemplateSends.js"

type SendBody = typeof Messaging.SendMessageRequest.Type

/** How a use-case other than `POST /v1/messages` sends (a conversation's reply, a template's test-send). */
export interface SendOptions {
  /** what the `Idempotency-Key` is bound to (default: the body) */
  readonly fingerprint?: unknown
  /** where the template's variables sit in the request (default `["template", "variables"]`) */
  readonly variablesPath?: ReadonlyArray<string>
}

export class Messages extends Effect.Service<Messages>()("@switchboard/service-api/Messages", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const channels = yield* ChannelsRepo.ChannelsRepo
    const messages = yield* MessagesRepo.MessagesRepo
    // `MESSAGE_RETENTION_DAYS` (`RetentionSettings`): what the reads still show
    const retention = yield* RetentionSettings.RetentionSettings
    const idempotency = yield* Idempotency
    const sendChecks = yield* SendChecksRepo.SendChecksRepo
    const sendWrites = yield* SendWritesRepo.SendWritesRepo
    const qrSafety = yield* QrSafety
    const templateSends = yield* TemplateSends
    const quota = yield* MessageQuota
    const contents = yield* SendContents
    const channelClient = yield* ChannelProtocol.ChannelEntity.client
    const groupChats = yield* GroupChatsRepo.GroupChatsRepo

    /**
     * The group chat a send names (`group_chat_id`, docs/API.md "Group chats"): 404 when the
     * workspace has none, 422 when `channel_id` names another channel than the group chat's.
     */
    const groupChatOf = (workspaceId: string, body: SendBody, groupChatId: string) =>
      Effect.gen(function*() {
        const found = yield* groupChats.get(workspaceId, groupChatId)
        if (Option.isNone(found)) {
          return yield* new Errors.NotFound({
            message: `No group chat ${groupChatId} in this workspace`,
            details: { resource: "group_chat", id: groupChatId }
          })
        }
        if (body.channel_id !== undefined && body.channel_id !== found.value.channel_id) {
          return yield* new Errors.ValidationError({
            message: "The group chat belongs to another channel",
            details: {
              reason: "group_chat_of_another_channel",
              issues: [{ path: ["channel_id"], message: "Leave channel_id out, or name the group chat's channel" }]
            }
          })
        }
        return found.value
      })

    /** A send to a group chat the channel's number cannot write in: 409 with the reason. */
    const refuseGroupChat = (group: GroupChats.GroupChat) =>
      !group.is_participant
        ? new Errors.ChannelCapabilityUnavailable({
          message: `The channel's number is no longer a participant of group chat ${group.id}; nothing was sent`,
          details: { reason: "not_a_participant", group_chat_id: group.id }
        })
        : group.announce_only && !group.is_admin
        ? new Errors.ChannelCapabilityUnavailable({
          message:
            `Only admins may write in group chat ${group.id}, and the channel's number is not one; nothing was sent`,
          details: { reason: "group_chat_announce_only", group_chat_id: group.id }
        })
        : undefined

    /** Everything that can refuse a send, before anything is written. */
    const check = Effect.fn("Messages.check")(
      function*(principal: Security.Principal, body: SendBody, options: SendOptions) {
        // a group chat names its channel, and its address is the recipient
        const group = body.group_chat_id === undefined
          ? undefined
          : yield* groupChatOf(principal.workspaceId, body, body.group_chat_id)
        const to = group === undefined ? body.to! : GroupChats.groupChatAddress(group.whatsapp_group_id)
        const channelId = group === undefined ? body.channel_id : group.channel_id
        // one statement: the channel, its sandbox session, the recipient's verification, its backlog
        const found = yield* sendChecks.facts({
          workspaceId: principal.workspaceId,
          channelId,
          to,
          now: Schemas.toTimestamp(yield* Clock.currentTimeMillis)
        })
        if (Option.isNone(found)) {
          if (channelId !== undefined) {
            return yield* new Errors.ChannelNotFound({
              message: `No channel ${channelId} in this workspace`,
              details: { resource: "channel", id: channelId }
            })
          }
          return yield* new Errors.ValidationError({
            message: "Name a channel_id: the workspace has no default channel",
            details: {
              reason: "channel_required",
              issues: [{ path: ["channel_id"], message: "Required: the workspace has no default channel" }]
            }
          })
        }
        const facts = found.value
        const channel = facts.row.channel
        if (channel.provider === "sandbox" && principal.mode !== "test") {
          return yield* new Errors.SandboxTestKeyRequired({
            message: "Sending through a sandbox channel needs a test-mode API key (wa_test_...)"
          })
        }
        // one indexed read, before the transaction
        const template = body.template === undefined ? undefined : yield* templateSends.prepare({
          workspaceId: principal.workspaceId,
          slug: body.template.slug,
          variables: body.template.variables ?? {},
          provider: channel.provider,
          path: options.variablesPath ?? ["template", "variables"]
        })
        if (!ChannelStateMachine.acceptsSends(channel.status)) {
          return yield* new Errors.ChannelNotConnected({
            message: `Channel ${channel.id} is ${channel.status}, not connected`,
            details: { status: channel.status }
          })
        }
        // a sandbox channel sends only while its session lasts: past its expiry (even before the
        // sweeper archived the channel) or revoked, it is not connected any more
        if (channel.provider === "sandbox" && !facts.sandboxUsable) {
          return yield* new Errors.ChannelNotConnected({
            message: `Channel ${channel.id} belongs to a sandbox session that has ended; create a new session`,
            details: { status: channel.status, reason: "sandbox_session_ended" }
          })
        }
        if (
          group === undefined && channel.provider === "sandbox" && !SandboxNumbers.isMagicNumber(to) &&
          !facts.recipientVerified
        ) {
          return yield* new Errors.ValidationError({
            message: "The recipient is not verified for this sandbox session",
            details: {
              reason: "recipient_not_verified",
              issues: [{ path: ["to"], message: "Verify this recipient first (POST /v1/sandbox/sessions/{id}/verify)" }]
            }
          })
        }
        // capabilities not reported yet (never refreshed): nothing to judge by; the provider decides
        const type = Messaging.sendKind(body)
        const refusal = Option.flatMap(
          facts.row.capabilities,
          (c) => Option.fromNullable(SendCapability.sendCapabilityRefusal(c.message_types, type))
        )
        if (Option.isSome(refusal)) {
          return yield* new Errors.ChannelCapabilityUnavailable({
            message: `Channel ${channel.id} cannot send messages of type ${SendCapability.providerMessageType(type)}`,
            details: { reason: refusal.value, type: SendCapability.providerMessageType(type) }
          })
        }
        const mps = Option.match(facts.row.capabilities, { onNone: () => 0, onSome: (c) => c.max_throughput_mps })
        if (mps > 0 && facts.queued >= mps * 24 * 3600) {
          return yield* new Errors.ProviderRateLimited({
            message: "The channel's backlog exceeds 24 hours of its throughput; retry later",
            details: { max_throughput_mps: mps }
          })
        }
        const groupRefusal = group === undefined ? undefined : refuseGroupChat(group)
        if (groupRefusal !== undefined) return yield* groupRefusal
        // last: a URL's file is fetched here, once every cheaper check has passed
        const content = yield* contents.resolve(principal.workspaceId, channel.id, to, body, group?.id)
        return {
          channel,
          to,
          group,
          template,
          content,
          entitlements: Plans.resolveEntitlements(facts.plan, facts.overrides)
        }
      }
    )

    /**
     * A checked send written: its message `queued` with its contact, conversation, events and
     * stored response in one statement, under the QR channel's row or the monthly quota's lock
     * when one applies. Fails, having written nothing, when the write refuses it (the plan's
     * contacts limit, a lost claim, a contact deleted meanwhile).
     */
    const write = (
      workspaceId: Security.Principal["workspaceId"],
      body: SendBody,
      checked: Effect.Effect.Success<ReturnType<typeof check>>,
      now: string,
      held: HeldClaim<Messaging.Message> | undefined
    ) =>
      Effect.gen(function*() {
        const { channel, content, entitlements, group, template, to } = checked
        const category: MessageCategory.Category = body.category ?? template?.template.category ??
          MessageCategory.DEFAULT_CATEGORY
        // the message as written, with the ids of a new contact and conversation: the write
        // puts the existing ones in their place
        const queued = new Messaging.Message({
          id: yield* Ids.newId("msg"),
          object: "message",
          workspace_id: workspaceId,
          channel_id: channel.id,
          conversation_id: yield* Ids.newId("cnv"),
          // a send to a group chat has no contact: it goes to the group chat's conversation
          contact_id: group === undefined ? yield* Ids.newId("cnt") : null,
          ...(group === undefined ? {} : { group_chat_id: group.id }),
          direction: "outbound",
          from: channel.phone_number ?? null,
          to,
          type: content.type,
          text: { body: template?.body ?? body.text?.body ?? content.body ?? "" },
          ...(content.member === undefined || content.type === "text" || content.type === "template"
            ? {}
            : { [content.type]: content.member }),
          template: template
            ? { id: template.template.id, slug: template.template.slug, variables: template.variables }
            : null,
          category,
          status: "queued",
          failure: null,
          metadata: body.metadata ?? {},
          created_at: now,
          updated_at: now,
          sent_at: null,
          delivered_at: null,
          read_at: null,
          context: { reply_to: content.replyTo },
          sender: null,
          media: content.media
        })
        const input = {
          message: queued,
          priority: MessageCategory.PRIORITY[category],
          contactsLimit: enforcedLimit("contacts", entitlements.contacts) ?? null,
          // the stored response commits (or nothing does) with the message
          claim: held && { ref: held.ref, response: yield* held.encode(queued) }
        }
        // one statement, unless the send must first take a lock that serialises it up to
        // commit: a QR channel's row (its safety cap), the workspace's monthly quota
        const quotaApplies = quota.applies(channel, entitlements.monthly_message_quota)
        const written = channel.provider === "qr" || quotaApplies
          ? yield* transactions.run(Effect.gen(function*() {
            yield* qrSafety.admit(channel, to, { groupChat: group !== undefined })
            yield* quota.admit(channel, entitlements.monthly_message_quota)
            return yield* sendWrites.write(input)
          }))
          : yield* sendWrites.write(input)
        switch (written._tag) {
          case "ClaimLost":
            return yield* Effect.fail(held!.takenOver())
          case "LidContactGone":
            // deleted while the reply was checked: nothing was written
            return yield* new Errors.NotFound({
              message: "The conversation's contact was deleted; nothing was sent",
              details: { resource: "contact" }
            })
          case "ContactsLimitReached":
            return yield* refuseBeyond("contacts", entitlements.contacts, written.used).pipe(
              Effect.zipRight(Effect.dieMessage("a new contact was refused within the plan's limit"))
            )
        }
        return new Messaging.Message({
          ...queued,
          contact_id: written.contactId,
          conversation_id: written.conversationId
        })
      })

    const send = Effect.fn("Messages.send")(
      function*(
        principal: Security.Principal,
        body: SendBody,
        idempotencyKey: string | undefined,
        options: SendOptions = {}
      ) {
        const workspaceId = principal.workspaceId
        return yield* idempotency.run(
          { workspaceId, key: idempotencyKey, body: options.fingerprint ?? body, response: Messaging.Message },
          (_complete, held) =>
            Effect.gen(function*() {
              const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
              const checked = yield* check(principal, body, options)
              // refused from here on (or interrupted), a file fetched from a URL for it goes too
              const message = yield* write(workspaceId, body, checked, now, held).pipe(
                Effect.onError(() => contents.discard(checked.content))
              )
              // after commit: a lost wake-up only delays dispatch (the sweeper repeats it)
              yield* channelClient(checked.channel.id).Wake({ message_id: message.id }).pipe(
                Effect.catchAllCause(() => Effect.void),
                Effect.forkDaemon
              )
              yield* SendMetrics.recordAccepted(checked.channel.provider)
              return message
            })
        ).pipe(Effect.tapError(SendMetrics.recordRefused))
      }
    )

    const list = Effect.fn("Messages.list")(function*(workspaceId: string, query: {
      readonly limit?: number | undefined
      readonly after?: Pagination.CursorPosition | undefined
      readonly status?: MessageStateMachine.MessageStatus | undefined
      readonly state?: MessageStateMachine.MessageStatus | undefined
      readonly direction?: "outbound" | "inbound" | undefined
      readonly category?: MessageCategory.Category | undefined
      readonly channel_id?: string | undefined
    }) {
      if (query.channel_id !== undefined && Option.isNone(yield* channels.find(workspaceId, query.channel_id))) {
        return yield* new Errors.ChannelNotFound({
          message: `No channel ${query.channel_id} in this workspace`,
          details: { resource: "channel", id: query.channel_id }
        })
      }
      if (query.status !== undefined && query.state !== undefined && query.status !== query.state) {
        return yield* new Errors.ValidationError({
          message: "status and state disagree",
          details: { issues: [{ path: ["state"], message: "state is an alias of status; send one or the same value" }] }
        })
      }
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      const rows = yield* messages.list(
        workspaceId,
        {
          status: query.status ?? query.state,
          direction: query.direction,
          category: query.category,
          channelId: query.channel_id,
          ids: (yield* RetentionSettings.keptMessages(retention))?.ids
        },
        limit,
        query.after
      )
      return Pagination.toPage(rows, limit, (m) => m)
    })

    /**
     * `GET /v1/messages/{id}`: 404 for an id of no message of the workspace, and for one made
     * before `MESSAGE_RETENTION_DAYS` (`details.reason = past_retention`, whether or not its month
     * was dropped yet: docs/API.md "Messages", "Retention").
     */
    const get = Effect.fn("Messages.get")(function*(workspaceId: string, id: string) {
      const kept = yield* RetentionSettings.keptMessages(retention)
      if (kept !== undefined && id < kept.ids.lower) {
        return yield* new Errors.NotFound({
          message: `No message ${id}: messages are kept ${kept.days} days`,
          details: { resource: "message", id, reason: "past_retention", retention_days: kept.days }
        })
      }
      const found = yield* messages.find(workspaceId, id)
      if (Option.isNone(found)) {
        return yield* new Errors.NotFound({ message: `No message ${id}`, details: { resource: "message", id } })
      }
      return found.value
    })

    return { send, list, get } as const
  }),
  dependencies: [
    ChannelsRepo.ChannelsRepo.Default,
    MessagesRepo.MessagesRepo.Default,
    Transactions.Transactions.Default,
    Idempotency.Default,
    SendChecksRepo.SendChecksRepo.Default,
    SendWritesRepo.SendWritesRepo.Default,
    QrSafety.Default,
    TemplateSends.Default,
    GroupChatsRepo.GroupChatsRepo.Default,
    MessageQuota.Default,
    SendContents.Default
  ]
}) {}
