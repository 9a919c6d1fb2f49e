/**
 * The sandbox's simulated group chats (docs/API.md "Group chats"): made and left over HTTP, kept
 * as a QR channel keeps what WhatsApp reports, so group flows are testable without WhatsApp. What
 * they accept is `SandboxGroupChatRules`; a simulated message in one goes through `Sandbox.inbound`.
 */
import type { Security } from "@switchboard/api"
import { ContactsRepo, GroupChatsRepo, Transactions } from "@switchboard/db"
import { Ids, type SandboxInbound, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"
import { Sandbox } from "./Sandbox.js"
import * as SandboxGroupChatRules from "./SandboxGroupChatRules.js"

export class SandboxGroupChats
  extends Effect.Service<SandboxGroupChats>()("@switchboard/service-api/SandboxGroupChats", {
    effect: Effect.gen(function*() {
      const sandbox = yield* Sandbox
      const transactions = yield* Transactions.Transactions
      const groupChats = yield* GroupChatsRepo.GroupChatsRepo
      const contacts = yield* ContactsRepo.ContactsRepo
      const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

      /**
       * A simulated group chat (docs/API.md "Group chats"): the session's number and the given
       * participants (verified recipients or magic numbers), kept as a QR channel keeps what WhatsApp
       * reports; the first participant created it (`superadmin`).
       */
      const createGroupChat = Effect.fn("SandboxGroupChats.create")(function*(
        principal: Security.Principal,
        id: string,
        input: SandboxInbound.SandboxGroupChatRequest
      ) {
        const session = yield* sandbox.active(principal, id)
        const { participants, admins } = yield* SandboxGroupChatRules.participantsOf(
          input,
          (phone) => sandbox.knownTo(session, phone)
        )
        const at = yield* now
        const groupChat = SandboxGroupChatRules.simulatedGroupChat(input, participants, admins)
        const groupChatId = yield* transactions.run(Effect.gen(function*() {
          const kept = yield* groupChats.upsert({
            id: yield* Ids.newId("gch"),
            workspaceId: principal.workspaceId,
            channelId: session.channel_id,
            groupChat,
            now: at
          })
          const members = yield* Effect.forEach(groupChat.participants, (p) =>
            Effect.map(
              contacts.upsertContact(principal.workspaceId, p.phoneNumber!, at, { groupChatOnly: true }),
              (contact) => ({ contactId: contact.id, role: p.role })
            ))
          yield* groupChats.setParticipants(kept, members, at)
          return kept
        }))
        return Option.getOrThrow(yield* groupChats.find(principal.workspaceId, groupChatId))
      })

      /**
       * The simulated group chat's admins remove the session's number: the group chat is kept,
       * `is_participant: false` (sends to it are refused, docs/API.md "Group chats").
       */
      const removeFromGroupChat = Effect.fn("SandboxGroupChats.removeNumber")(function*(
        principal: Security.Principal,
        id: string,
        groupChatId: string
      ) {
        const session = yield* sandbox.active(principal, id)
        const chat = yield* sandbox.groupChatOf(principal, session, groupChatId)
        yield* groupChats.markLeft(session.channel_id, { left: [chat.whatsapp_group_id] }, yield* now)
        return Option.getOrThrow(yield* groupChats.find(principal.workspaceId, groupChatId))
      })

      return { createGroupChat, removeFromGroupChat } as const
    }),
    dependencies: [
      Sandbox.Default,
      Transactions.Transactions.Default,
      GroupChatsRepo.GroupChatsRepo.Default,
      ContactsRepo.ContactsRepo.Default
    ]
  })
{}
