/**
 * The use-case of the group chats a provider reports (docs/API.md "Group chats"): each group chat
 * of the report kept as reported (created when new), its participants made contacts of the
 * workspace as any sender is (a LID participant on the number's contact when the channel knows the
 * mapping, otherwise on a contact with the LID alone) and kept with their roles; the group chats
 * the number left marked so (with a complete report, every other group chat of the channel), in one
 * transaction. A participant named by both forms teaches the channel its mapping afterwards, which
 * merges a LID-only contact into the number's (`LidMappings`). Recording a report twice changes
 * nothing the second time.
 */
import { ContactsRepo, type DatabaseUnavailable, GroupChatsRepo, LidRepo, Transactions } from "@switchboard/db"
import { Characters, type GroupChats, Ids } from "@switchboard/domain"
import { Effect, Option } from "effect"
import { LidMappings } from "./LidMappings.js"

export class GroupChatsSync extends Effect.Service<GroupChatsSync>()("@switchboard/entities/GroupChatsSync", {
  effect: Effect.gen(function*() {
    const repo = yield* GroupChatsRepo.GroupChatsRepo
    const contacts = yield* ContactsRepo.ContactsRepo
    const lids = yield* LidRepo.LidRepo
    const transactions = yield* Transactions.Transactions
    const mappings = yield* LidMappings

    /** The contact of a participant (of a sender named the same way), created when new. */
    const contactOf = (
      workspaceId: string,
      channelId: string,
      participant: { readonly phoneNumber: string | null; readonly whatsappLid: string | null },
      now: string
    ): Effect.Effect<string, DatabaseUnavailable.DatabaseUnavailable> =>
      Effect.gen(function*() {
        const lid = participant.whatsappLid
        const phone = participant.phoneNumber ??
          (lid === null ? null : Option.getOrNull(yield* lids.mappedPhone(channelId, lid)))
        // brought in by the group chat alone: not counted against the plan's contacts limit
        if (phone !== null) return (yield* contacts.upsertContact(workspaceId, phone, now, { groupChatOnly: true })).id
        return yield* lids.upsertLidContact(workspaceId, lid!, yield* Ids.newId("cnt"), now, { groupChatOnly: true })
      })

    const record = Effect.fn("GroupChatsSync.record")(function*(input: {
      readonly workspaceId: string
      readonly channelId: string
      readonly groupChats: ReadonlyArray<GroupChats.ProviderGroupChat>
      readonly left: ReadonlyArray<string>
      /** the report lists every group chat the number is in */
      readonly complete: boolean
      readonly now: string
    }) {
      const { channelId, now, workspaceId } = input
      // as Postgres can hold it: a subject or description with U+0000 has U+FFFD in its place
      const groupChats = Characters.storable(input.groupChats)
      yield* transactions.run(Effect.gen(function*() {
        for (const groupChat of groupChats) {
          const id = yield* repo.upsert({ id: yield* Ids.newId("gch"), workspaceId, channelId, groupChat, now })
          const participants = yield* Effect.forEach(
            groupChat.participants,
            (p) => Effect.map(contactOf(workspaceId, channelId, p, now), (contactId) => ({ contactId, role: p.role }))
          )
          // one row per contact (a participant listed twice keeps its highest role)
          const byContact = new Map<string, GroupChats.GroupChatRole>()
          for (const p of participants) {
            const known = byContact.get(p.contactId)
            if (known === undefined || known === "member" || p.role === "superadmin") byContact.set(p.contactId, p.role)
          }
          yield* repo.setParticipants(id, [...byContact].map(([contactId, role]) => ({ contactId, role })), now)
        }
        yield* repo.markLeft(channelId, { left: Characters.storable(input.left) }, now)
        if (input.complete) {
          yield* repo.markLeft(channelId, { except: groupChats.map((g) => g.whatsappGroupId) }, now)
        }
      }))
      // a mapping the channel already keeps is not learned again (a group's every update lists everyone)
      for (const groupChat of groupChats) {
        for (const p of groupChat.participants) {
          if (p.phoneNumber === null || p.whatsappLid === null) continue
          const known = yield* lids.mappedPhone(channelId, p.whatsappLid)
          if (Option.getOrNull(known) !== p.phoneNumber) yield* mappings.learn(channelId, p.whatsappLid, p.phoneNumber)
        }
      }
    })

    /**
     * The channel's link was forgotten (logged out, or unlinked on the phone): it stands for no
     * number, so it is in none of its group chats until a link reports them again.
     */
    const unlinked = Effect.fn("GroupChatsSync.unlinked")(function*(channelId: string, now: string) {
      yield* repo.markLeft(channelId, { except: [] }, now)
    })

    return { record, unlinked } as const
  }),
  dependencies: [
    GroupChatsRepo.GroupChatsRepo.Default,
    ContactsRepo.ContactsRepo.Default,
    LidRepo.LidRepo.Default,
    Transactions.Transactions.Default,
    LidMappings.Default
  ]
}) {}
