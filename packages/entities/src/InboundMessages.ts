/**
 * The use-case of a message a provider reports from a contact (docs/API.md "Messages"): the contact and
 * the conversation (created when new, reopened when closed), the message (`delivered`, inbound,
 * of its kind, with the message it quotes or reacts to resolved to our id) in one transaction.
 * A message without a file emits `message.received` in that transaction; a message with one
 * (image, voice note, document, ...) is visible at once with `media.status: "pending"` and its
 * `media` row is the durable download job: the media worker (`MediaWorker.ts`) stores the bytes
 * and only then emits `message.received`. The Channel entity calls it for every inbound message
 * its connection hears; a message heard twice (same provider id on the channel) is recorded once,
 * except that one recorded before its content reached the device (view-once, placeholder,
 * undecryptable: `MessageContent.AWAITING_CONTENT_KINDS`) is completed in place by that content,
 * with a second `message.received` for the same message.
 * A sender WhatsApp names by LID alone lands on the number's contact when the channel learned the
 * mapping, otherwise on a contact with the LID and no number (merged later: `LidMappings`).
 * A message in a group chat (docs/API.md "Group chats") is recorded in the group chat's own
 * conversation (never a 1:1 one), with the participant who wrote as its contact and the
 * participants it mentions as `mentions` (contacts made as a sender's would be).
 */
import {
  ContactsRepo,
  ConversationsRepo,
  type DatabaseUnavailable,
  EventsRepo,
  GroupChatsRepo,
  LidRepo,
  MediaRepo,
  MessagesRepo,
  RetentionSettings,
  Transactions
} from "@switchboard/db"
import {
  Characters,
  Events,
  Ids,
  type Media,
  MessageCategory,
  MessageContent,
  type Messaging,
  Schemas
} from "@switchboard/domain"
import { CallMetrics, InboundMetrics } from "@switchboard/providers"
import { Effect, Option } from "effect"
import { LidMappings } from "./LidMappings.js"

/**
 * What a text-only client reads in `text.body` for each kind (docs/API.md "Messages"): the text, a
 * caption, an edit's new text; "" for the rest.
 */
export const textOf = (body: MessageContent.InboundBody): string => {
  switch (body._tag) {
    case "text":
      return body.body
    case "media":
      return body.caption ?? ""
    case "edit":
      return body.body
    default:
      return ""
  }
}

/** `message.received` of an inbound message. */
export const receivedEvent = (message: Messaging.Message) =>
  Events.DomainEvent.make("message.received", {
    object: "message",
    object_id: message.id,
    message_id: message.id,
    conversation_id: message.conversation_id,
    // an inbound message always has its sender's contact (only a send to a group chat has none)
    contact_id: message.contact_id!,
    channel_id: message.channel_id,
    ...(message.group_chat_id === undefined ? {} : { group_chat_id: message.group_chat_id }),
    direction: "inbound",
    type: message.type,
    ...(message.media !== null && (message.media.status === "ready" || message.media.status === "failed")
      ? { media_status: message.media.status }
      : {})
  })

/** What `InboundMessages.record` writes in the transaction of a new message (its `alongside`). */
export interface Alongside {
  /** first in the transaction, whether the message is new or not */
  readonly first: Effect.Effect<void, DatabaseUnavailable.DatabaseUnavailable>
  /** after the new message is written (not run for a message heard before) */
  readonly then: (message: Messaging.Message) => Effect.Effect<void, DatabaseUnavailable.DatabaseUnavailable>
}

export class InboundMessages extends Effect.Service<InboundMessages>()("@switchboard/entities/InboundMessages", {
  effect: Effect.gen(function*() {
    const contacts = yield* ContactsRepo.ContactsRepo
    const conversations = yield* ConversationsRepo.ConversationsRepo
    const messages = yield* MessagesRepo.MessagesRepo
    const media = yield* MediaRepo.MediaRepo
    const events = yield* EventsRepo.EventsRepo
    const transactions = yield* Transactions.Transactions
    const retentionDays = (yield* RetentionSettings.RetentionSettings).mediaDays
    const lids = yield* LidRepo.LidRepo
    const mappings = yield* LidMappings
    const groupChats = yield* GroupChatsRepo.GroupChatsRepo

    /**
     * The contact of a participant mentioned in a group chat, created when new (`None`: named by
     * neither form); brought in by the group chat alone, so not counted against the plan's limit.
     */
    const contactOf = (
      workspaceId: string,
      channelId: string,
      who: MessageContent.InboundSender,
      now: string
    ): Effect.Effect<Option.Option<string>, DatabaseUnavailable.DatabaseUnavailable> =>
      Effect.gen(function*() {
        const lid = who.whatsappLid
        const phone = who.phoneNumber ??
          (lid === null ? null : Option.getOrNull(yield* lids.mappedPhone(channelId, lid)))
        const inGroup = { groupChatOnly: true }
        if (phone !== null) return Option.some((yield* contacts.upsertContact(workspaceId, phone, now, inGroup)).id)
        if (lid === null) return Option.none()
        return Option.some(yield* lids.upsertLidContact(workspaceId, lid, yield* Ids.newId("cnt"), now, inGroup))
      })

    /** The member of a non-text message, our ids resolved (`mediaId`: the new media row's). */
    const memberOf = (channelId: string, body: MessageContent.InboundBody, mediaId: Media.Media["id"] | null) =>
      Effect.gen(function*() {
        const target = (providerId: string) => messages.idForProviderMessage(channelId, providerId)
        switch (body._tag) {
          case "text":
            return undefined
          case "media": {
            // the caller made the media row of every media message
            if (mediaId === null) return yield* Effect.dieMessage("a media message without its media row")
            const file = {
              media_id: mediaId,
              mime_type: body.mimeType,
              size_bytes: null,
              sha256: null,
              caption: body.caption
            }
            return body.kind === "document"
              ? { ...file, filename: body.filename }
              : body.kind === "audio"
              ? { ...file, voice: body.voice }
              : file
          }
          case "location":
            return { latitude: body.latitude, longitude: body.longitude, name: body.name, address: body.address }
          case "contacts":
            return body.contacts
          case "reaction":
            return { message_id: yield* target(body.targetProviderMessageId), emoji: body.emoji }
          case "edit":
            return { message_id: yield* target(body.targetProviderMessageId), text: { body: body.body } }
          case "revoke":
            return { message_id: yield* target(body.targetProviderMessageId) }
          case "call":
            return { video: body.video, status: body.status, duration_s: body.durationS }
          case "unsupported":
            return { kind: body.kind }
        }
      }) as Effect.Effect<Messaging.MessageMemberValue | undefined>

    /**
     * Records it; `None` when this provider message was recorded before (a repeated report).
     * `alongside`: written in the same transaction, `first` before anything else (a lock to take
     * in the order other writers take it) and `then` with the message when it is new, so the two
     * are recorded together or not at all (a call and its policy reply, `InboundCalls`).
     */
    const record = Effect.fn("InboundMessages.record")(function*(input: {
      readonly workspaceId: string
      readonly channelId: string
      /** the channel's own number, if known */
      readonly channelNumber: string | null
      readonly content: MessageContent.InboundContent
      readonly now: string
    }, alongside?: Alongside) {
      // what the provider handed over, as Postgres can hold it (U+0000 becomes U+FFFD; the
      // download handle is the provider's own)
      const content = Characters.storable(input.content, ["source"])
      const type = MessageContent.inboundType(content.body)
      const group = content.groupChat ?? null
      const lid = content.sender.whatsappLid
      // a sender named by LID alone: the number WhatsApp revealed for it on this channel, if any
      const from = content.sender.phoneNumber ??
        (lid === null ? null : Option.getOrNull(yield* lids.mappedPhone(input.channelId, lid)))
      if (from === null && lid === null) {
        yield* Effect.logWarning("inbound message without a sender not recorded").pipe(
          Effect.annotateLogs({ provider_message_id: content.providerMessageId, type })
        )
        yield* InboundMetrics.countInbound(type, "ignored", "no_sender")
        return Option.none<Messaging.Message>()
      }
      /** The media download job of a file message, or `message.received` for the rest. */
      const announce = (message: Messaging.Message, body: MessageContent.InboundBody, mediaId: string | null) =>
        body._tag === "media" && mediaId !== null
          // the download job: the worker stores the bytes, then emits `message.received`
          ? media.createInbound({
            id: mediaId,
            workspaceId: input.workspaceId,
            channelId: input.channelId,
            messageId: message.id,
            kind: body.kind,
            mimeType: body.mimeType,
            filename: body.filename,
            expectedSize: body.sizeBytes,
            expectedSha256: body.sha256,
            source: body.source,
            now: input.now,
            expiresAt: Schemas.toTimestamp(Date.parse(input.now) + retentionDays * 86_400_000)
          })
          : events.append({ workspaceId: input.workspaceId, event: receivedEvent(message), occurredAt: input.now })
      const replyTo = content.quotedProviderMessageId === null
        ? Effect.succeed(null)
        : messages.idForProviderMessage(input.channelId, content.quotedProviderMessageId)
      const recorded = yield* transactions.run(Effect.gen(function*() {
        if (alongside !== undefined) yield* alongside.first
        const body = content.body
        if (yield* messages.hasProviderMessage(input.channelId, content.providerMessageId)) {
          // heard before: a repeated report, or the content of a message recorded without it
          // (view-once, placeholder, undecryptable), which completes that message in place
          if (MessageContent.awaitsContent(body)) return Option.none<Messaging.Message>()
          const mediaId = body._tag === "media" ? yield* Ids.newId("med") : null
          const completed = yield* messages.completeAwaiting({
            channelId: input.channelId,
            providerMessageId: content.providerMessageId,
            type,
            body: textOf(body),
            content: yield* memberOf(input.channelId, body, mediaId),
            replyTo: yield* replyTo,
            mediaId,
            now: input.now
          })
          if (Option.isSome(completed)) yield* announce(completed.value, body, mediaId)
          return completed
        }
        // a participant who writes in a group chat: its contact is not counted against the plan's
        // limit until it has a 1:1 conversation (docs/API.md "Contacts")
        const inGroup = { groupChatOnly: group !== null }
        const contact = from !== null
          ? yield* contacts.upsertContact(input.workspaceId, from, input.now, inGroup)
          : { id: yield* lids.upsertLidContact(input.workspaceId, lid!, yield* Ids.newId("cnt"), input.now, inGroup) }
        // a group chat's message goes to the group chat's conversation, never to the participant's
        const groupChatId = group === null ? null : yield* groupChats.idForMessage({
          id: yield* Ids.newId("gch"),
          workspaceId: input.workspaceId,
          channelId: input.channelId,
          whatsappGroupId: group.whatsappGroupId,
          now: input.now
        })
        // a participant whose contact was deleted takes its seat back with the contact it has now
        if (groupChatId !== null) yield* groupChats.reseat(groupChatId, contact.id)
        const conversationId = groupChatId === null
          ? yield* conversations.upsertConversation(
            input.workspaceId,
            input.channelId,
            contact.id,
            input.now,
            "inbound"
          )
          : yield* conversations.upsertGroupConversation(
            input.workspaceId,
            input.channelId,
            groupChatId,
            input.now,
            "inbound"
          )
        const mentions = group === null ? [] : yield* Effect.forEach(
          content.mentions ?? [],
          (who) => contactOf(input.workspaceId, input.channelId, who, input.now)
        ).pipe(Effect.map((found) => [...new Set(found.flatMap(Option.toArray))]))
        const messageId = yield* Ids.newId("msg")
        const mediaId = body._tag === "media" ? yield* Ids.newId("med") : null
        const message = yield* messages.insert({
          id: messageId,
          workspaceId: input.workspaceId,
          channelId: input.channelId,
          conversationId,
          contactId: contact.id,
          direction: "inbound",
          from,
          to: input.channelNumber ?? "",
          body: textOf(body),
          category: MessageCategory.DEFAULT_CATEGORY,
          priority: MessageCategory.PRIORITY[MessageCategory.DEFAULT_CATEGORY],
          status: "delivered",
          metadata: {},
          now: input.now,
          providerMessageId: content.providerMessageId,
          type,
          content: yield* memberOf(input.channelId, body, mediaId),
          replyTo: yield* replyTo,
          senderLid: content.sender.whatsappLid,
          mediaId,
          groupChatId,
          mentions
        })
        yield* announce(message, body, mediaId)
        if (alongside !== undefined) yield* alongside.then(message)
        return Option.some(message)
      }))
      yield* Option.isSome(recorded)
        ? InboundMetrics.countInbound(type, "recorded")
        : InboundMetrics.countInbound(type, "ignored", "duplicate")
      if (Option.isSome(recorded) && content.body._tag === "call") {
        yield* CallMetrics.countCall(content.body.status, content.body.video)
      }
      // both known: the mapping is kept and a contact known by the LID alone merged into this one
      if (content.sender.phoneNumber !== null && lid !== null) {
        yield* mappings.learn(input.channelId, lid, content.sender.phoneNumber)
      }
      return recorded
    })

    return { record, learnLid: mappings.learn } as const
  }),
  dependencies: [
    ContactsRepo.ContactsRepo.Default,
    ConversationsRepo.ConversationsRepo.Default,
    GroupChatsRepo.GroupChatsRepo.Default,
    MessagesRepo.MessagesRepo.Default,
    MediaRepo.MediaRepo.Default,
    EventsRepo.EventsRepo.Default,
    Transactions.Transactions.Default,
    LidRepo.LidRepo.Default,
    LidMappings.Default
  ]
}) {}
