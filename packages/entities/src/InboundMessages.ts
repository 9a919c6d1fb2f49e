/**
 * The use-case of a message a provider reports from a contact: the contact and the conversation
 * (created when new, reopened when closed), the message (`delivered`, inbound) and `message.received`, in one
 * transaction. The Channel entity calls it for every inbound message its connection hears.
 */
import { ContactsRepo, ConversationsRepo, EventsRepo, MessagesRepo, Transactions } from "@switchboard/db"
import { DEFAULT_CATEGORY, DomainEvent, newId, PRIORITY } from "@switchboard/domain"
import type { Message } from "@switchboard/domain"
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
      readonly providerMessageId: string
      readonly from: string
      readonly body: string
      readonly now: string
    }) {
      return yield* transactions.run(Effect.gen(function*() {
        if (yield* messages.hasProviderMessage(input.channelId, input.providerMessageId)) {
          return Option.none<Message>()
        }
        const contact = yield* contacts.upsertContact(input.workspaceId, input.from, input.now)
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
          from: input.from,
          to: input.channelNumber ?? "",
          body: input.body,
          category: DEFAULT_CATEGORY,
          priority: PRIORITY[DEFAULT_CATEGORY],
          status: "delivered",
          metadata: {},
          now: input.now,
          providerMessageId: input.providerMessageId
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
            type: "text"
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
