/**
 * The use-case of a message a provider reports from a contact: the contact and the conversation
 * (created when new, reopened when closed), the message (`delivered`, inbound) and `message.received`, in one
 * transaction. The Channel entity calls it for every inbound message its connection hears.
 */
import { ContactsRepo, ConversationsRepo, EventsRepo, MessagesRepo, Transactions } from "@switchboard/db"
import { DEFAULT_CATEGORY, DomainEvent, inboundType, newId, PRIORITY } from "@switchboard/domain"
import type { InboundContent, Message } from "@switchboard/domain"
import { Effect, Option } from "effect"

export class InboundMessages extends Effect.Service<InboundMessages>()("@switchboard/entities/InboundMessages", {
  effect: Effect.gen(function*() {
    const contacts = yield* ContactsRepo
    const conversations = yield* ConversationsRepo
    const messages = yield* MessagesRepo
    const events = yield* EventsRepo
    const transactions = yield* Transactions

    /** Records it; `None` when this provider message was recorded before (a repeated report). */
    const record = Effect.fn("InboundMessages.record")(function*(input: {
      readonly workspaceId: string
      readonly channelId: string
      /** the channel's own number, if known */
      readonly channelNumber: string | null
      readonly content: InboundContent
      readonly now: string
    }) {
      const { content } = input
      const from = content.sender.phoneNumber
      if (from === null) {
        yield* Effect.logWarning("inbound message from a sender without a phone number not recorded").pipe(
          Effect.annotateLogs({ provider_message_id: content.providerMessageId, type: inboundType(content.body) })
        )
        return Option.none<Message>()
      }
      const body = content.body._tag === "text" ? content.body.body : ""
      return yield* transactions.run(Effect.gen(function*() {
        if (yield* messages.hasProviderMessage(input.channelId, content.providerMessageId)) {
          return Option.none<Message>()
        }
        const contact = yield* contacts.upsertContact(input.workspaceId, from, input.now)
        const conversationId = yield* conversations.upsertConversation(
          input.workspaceId,
          input.channelId,
          contact.id,
          input.now,
          "inbound"
        )
        const message = yield* messages.insert({
          id: yield* newId("msg"),
          workspaceId: input.workspaceId,
          channelId: input.channelId,
          conversationId,
          contactId: contact.id,
          direction: "inbound",
          from,
          to: input.channelNumber ?? "",
          body,
          category: DEFAULT_CATEGORY,
          priority: PRIORITY[DEFAULT_CATEGORY],
          status: "delivered",
          metadata: {},
          now: input.now,
          providerMessageId: content.providerMessageId
        })
        yield* events.append({
          workspaceId: input.workspaceId,
          event: DomainEvent.make("message.received", {
            object: "message",
            object_id: message.id,
            message_id: message.id,
            conversation_id: message.conversation_id,
            contact_id: message.contact_id,
            channel_id: message.channel_id,
            direction: "inbound",
            type: inboundType(content.body)
          }),
          occurredAt: input.now
        })
        return Option.some(message)
      }))
    })

    return { record } as const
  }),
  dependencies: [
    ContactsRepo.Default,
    ConversationsRepo.Default,
    MessagesRepo.Default,
    EventsRepo.Default,
    Transactions.Default
  ]
}) {}
