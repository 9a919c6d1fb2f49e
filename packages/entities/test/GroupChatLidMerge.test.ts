/**
 * A group chat participant WhatsApp names by LID alone, merged into the number's contact when the
 * mapping arrives (docs/API.md "Group chats": "then its contact is merged as for 1:1 senders"):
 * the group chat keeps the participant, now the number's contact, with its role.
 */
import { assert, describe, layer } from "@effect/vitest"
import { ContactsRepo, GroupChatsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Schemas } from "@switchboard/domain"
import { GroupChatsSync, InboundMessages } from "@switchboard/entities"
import { Clock, Effect, Layer, Option } from "effect"
import { EntityRepos, queueMessage, setupChannel } from "./support.js"

const TestLayer = Layer.mergeAll(EntityRepos, GroupChatsRepo.GroupChatsRepo.Default).pipe(
  Layer.provideMerge(TestDatabase.sqlLayer)
)

const LID = "223344556677889"
const PHONE = "+4915122334455"

describe("group chat participants and the LID merge", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.effect("keeps a LID-only participant in its group chats once it is merged into the number's contact", () =>
      Effect.gen(function*() {
        const sync = yield* GroupChatsSync.GroupChatsSync
        const inbound = yield* InboundMessages.InboundMessages
        const repo = yield* GroupChatsRepo.GroupChatsRepo
        const target = yield* setupChannel({ provider: "qr" })
        const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
        // we wrote to the number first: its contact exists
        const ours = yield* queueMessage(target, { to: PHONE })
        // a group names the same person by LID alone, as an admin, beside a member known by number
        yield* sync.record({
          workspaceId: target.workspaceId,
          channelId: target.channelId,
          groupChats: [{
            whatsappGroupId: "120363000000000001",
            subject: "Orders",
            description: null,
            announceOnly: false,
            isAdmin: false,
            participants: [
              { phoneNumber: null, whatsappLid: LID, role: "admin" },
              { phoneNumber: "+4915100000001", whatsappLid: null, role: "member" }
            ]
          }, {
            // a group that lists the person twice, by number (its creator) and by LID
            whatsappGroupId: "120363000000000002",
            subject: "Team",
            description: null,
            announceOnly: false,
            isAdmin: false,
            participants: [
              { phoneNumber: PHONE, whatsappLid: null, role: "superadmin" },
              { phoneNumber: null, whatsappLid: LID, role: "member" }
            ]
          }],
          left: [],
          complete: true,
          now
        })
        const group = Option.getOrThrow(yield* repo.byWhatsAppId(target.channelId, "120363000000000001"))
        const before = Option.getOrThrow(yield* repo.find(target.workspaceId, group.id))
        assert.deepStrictEqual(before.participants.map((p) => [p.phone_number, p.whatsapp_lid, p.role]), [
          [null, LID, "admin"],
          ["+4915100000001", null, "member"]
        ])

        // WhatsApp reveals the mapping (a 1:1 message naming both, say): the LID contact is merged
        yield* inbound.learnLid(target.channelId, LID, PHONE)

        const after = Option.getOrThrow(yield* repo.find(target.workspaceId, group.id))
        assert.strictEqual(after.participant_count, 2)
        assert.deepStrictEqual(after.participants.map((p) => [p.contact_id, p.phone_number, p.whatsapp_lid, p.role]), [
          [ours.contact_id, PHONE, LID, "admin"],
          [after.participants[1]!.contact_id, "+4915100000001", null, "member"]
        ])
        const team = Option.getOrThrow(yield* repo.byWhatsAppId(target.channelId, "120363000000000002"))
        const seats = Option.getOrThrow(yield* repo.find(target.workspaceId, team.id)).participants
        assert.deepStrictEqual(seats.map((p) => [p.contact_id, p.role]), [[ours.contact_id, "superadmin"]])
        // the merged contact is the only one with the number or the LID
        const contacts = yield* ContactsRepo.ContactsRepo
        assert.strictEqual(Option.getOrThrow(yield* contacts.findIdByPhone(target.workspaceId, PHONE)), ours.contact_id)
      }))
  })
})
