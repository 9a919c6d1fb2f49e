/**
 * Senders WhatsApp names by LID alone (docs/API.md "Contacts"): kept on a contact with the LID and no
 * number, then merged into the number's contact when the mapping arrives (one contact, one
 * conversation, history kept, `contact.updated` naming the merge); later messages from the LID
 * land on the number's contact.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ChannelsRepo, ContactsRepo, ConversationsRepo, GroupChatsRepo, MessagesRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { type MessageContent, Schemas } from "@switchboard/domain"
import { InboundMessages } from "@switchboard/entities"
import { Clock, Effect, Layer, Option } from "effect"
import { eventTypes, queueMessage, setupChannel } from "./support.js"

const TestLayer = Layer.mergeAll(
  InboundMessages.InboundMessages.Default,
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  ChannelsRepo.ChannelsRepo.Default,
  GroupChatsRepo.GroupChatsRepo.Default
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const LID = "123456789012345"
const PHONE = "+4915112345678"

let n = 0
const content = (sender: MessageContent.InboundContent["sender"], body: string): MessageContent.InboundContent => ({
  providerMessageId: `lid-test-${n++}`,
  sender,
  body: { _tag: "text", body },
  quotedProviderMessageId: null,
  at: Date.now()
})

const contactsOf = (workspaceId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ id: string; phone_number: string | null; whatsapp_lid: string | null }>`SELECT id,
      phone_number, whatsapp_lid FROM contacts WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`
  }).pipe(Effect.orDie)

const conversationsOf = (workspaceId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ id: string; contact_id: string | null }>`SELECT id, contact_id FROM conversations
      WHERE workspace_id = ${workspaceId}`
  }).pipe(Effect.orDie)

describe("LID senders", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.effect("keeps a LID-only sender on a contact without a number, then merges it into the number's contact", () =>
      Effect.gen(function*() {
        const inbound = yield* InboundMessages.InboundMessages
        const messages = yield* MessagesRepo.MessagesRepo
        const target = yield* setupChannel()
        const record = (c: MessageContent.InboundContent) =>
          Effect.map(
            inbound.record({
              workspaceId: target.workspaceId,
              channelId: target.channelId,
              channelNumber: "+15550100001",
              content: c,
              now: Schemas.toTimestamp(Date.now())
            }),
            Option.getOrThrow
          )
        // we wrote to the number first: its contact and conversation exist
        const ours = yield* queueMessage(target, { to: PHONE })
        const first = yield* record(content({ phoneNumber: null, whatsappLid: LID }, "who am I"))
        assert.isNull(first.from)
        assert.deepStrictEqual(first.sender, { phone_number: null, whatsapp_lid: LID })
        const second = yield* record(content({ phoneNumber: null, whatsappLid: LID }, "still me"))
        assert.strictEqual(second.contact_id, first.contact_id)
        assert.strictEqual(second.conversation_id, first.conversation_id)
        const before = yield* contactsOf(target.workspaceId)
        assert.deepStrictEqual(before.map((c) => [c.phone_number, c.whatsapp_lid]), [[PHONE, null], [null, LID]])
        assert.strictEqual((yield* conversationsOf(target.workspaceId)).length, 2)

        // WhatsApp reveals the mapping
        yield* inbound.learnLid(target.channelId, LID, PHONE)
        const after = yield* contactsOf(target.workspaceId)
        assert.deepStrictEqual(after.map((c) => [c.id, c.phone_number, c.whatsapp_lid]), [[
          ours.contact_id,
          PHONE,
          LID
        ]])
        const conversations = yield* conversationsOf(target.workspaceId)
        assert.deepStrictEqual(conversations, [{ id: ours.conversation_id, contact_id: ours.contact_id }])
        // history kept: the LID's messages are in the number's conversation, showing the number
        for (const id of [first.id, second.id]) {
          const moved = Option.getOrThrow(yield* messages.findById(id))
          assert.strictEqual(moved.conversation_id, ours.conversation_id)
          assert.strictEqual(moved.contact_id, ours.contact_id)
          assert.strictEqual(moved.from, PHONE)
          assert.strictEqual(moved.sender!.whatsapp_lid, LID)
        }
        const updated = (yield* eventTypes(ours.contact_id!)).filter((e) => e.type === "contact.updated")
        assert.strictEqual(updated.length, 1)
        assert.strictEqual(updated[0]!.data.merged_contact_id, first.contact_id)

        // the mapping is kept: a later message from the LID alone lands on the number's contact
        const third = yield* record(content({ phoneNumber: null, whatsappLid: LID }, "hello again"))
        assert.strictEqual(third.contact_id, ours.contact_id)
        assert.strictEqual(third.conversation_id, ours.conversation_id)
        assert.strictEqual(third.from, PHONE)
        // learning it again changes nothing
        yield* inbound.learnLid(target.channelId, LID, PHONE)
        assert.strictEqual((yield* contactsOf(target.workspaceId)).length, 1)
      }))

    it.effect("gives a LID-only contact its number when no contact has it; a message naming both teaches it", () =>
      Effect.gen(function*() {
        const inbound = yield* InboundMessages.InboundMessages
        const target = yield* setupChannel()
        const record = (c: MessageContent.InboundContent) =>
          Effect.map(
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              inbound.record({
                workspaceId: target.workspaceId,
                channelId: target.channelId,
                channelNumber: null,
                content: c,
                now: Schemas.toTimestamp(now)
              })),
            Option.getOrThrow
          )
        const lidOnly = yield* record(content({ phoneNumber: null, whatsappLid: "999" }, "hi"))
        // a message that names both (Baileys' remoteJidAlt) teaches the mapping
        const both = yield* record(content({ phoneNumber: "+4915199999999", whatsappLid: "999" }, "hi again"))
        assert.strictEqual(both.from, "+4915199999999")
        const contacts = yield* contactsOf(target.workspaceId)
        assert.deepStrictEqual(contacts.map((c) => [c.id, c.phone_number, c.whatsapp_lid]), [[
          both.contact_id,
          "+4915199999999",
          "999"
        ]])
        assert.notStrictEqual(lidOnly.contact_id, both.contact_id)
        assert.strictEqual((yield* conversationsOf(target.workspaceId)).length, 1)

        // and a LID-only contact with no number's contact around simply gets the number
        const other = yield* record(content({ phoneNumber: null, whatsappLid: "777" }, "x"))
        yield* inbound.learnLid(target.channelId, "777", "+4915177777777")
        const completed = (yield* contactsOf(target.workspaceId)).find((c) => c.id === other.contact_id)!
        assert.strictEqual(completed.phone_number, "+4915177777777")
        const updated = (yield* eventTypes(other.contact_id!)).filter((e) => e.type === "contact.updated")
        assert.deepStrictEqual(updated.map((e) => e.data.changed), [["phone_number"]])
      }))

    it.effect("merges a LID-only group chat participant: its messages, the mentions of it and its place move", () =>
      Effect.gen(function*() {
        const inbound = yield* InboundMessages.InboundMessages
        const groupChats = yield* GroupChatsRepo.GroupChatsRepo
        const sql = yield* SqlClient.SqlClient
        const target = yield* setupChannel()
        const groupChat = { whatsappGroupId: "120363000000000042" }
        const record = (c: MessageContent.InboundContent) =>
          Effect.map(
            inbound.record({
              workspaceId: target.workspaceId,
              channelId: target.channelId,
              channelNumber: null,
              content: { ...c, groupChat },
              now: Schemas.toTimestamp(Date.now())
            }),
            Option.getOrThrow
          )
        // the number's contact exists (we wrote to it), with its 1:1 conversation
        const ours = yield* queueMessage(target, { to: "+4915155555555" })
        const fromLid = yield* record(content({ phoneNumber: null, whatsappLid: "555" }, "hello group"))
        const mention = yield* record({
          ...content({ phoneNumber: "+4915144444444", whatsappLid: null }, "@555 welcome"),
          mentions: [{ phoneNumber: null, whatsappLid: "555" }]
        })
        assert.deepStrictEqual(mention.mentions, [fromLid.contact_id!])
        assert.strictEqual(mention.conversation_id, fromLid.conversation_id)
        assert.notStrictEqual(fromLid.conversation_id, ours.conversation_id)
        yield* groupChats.setParticipants(fromLid.group_chat_id!, [
          { contactId: fromLid.contact_id!, role: "member" },
          { contactId: mention.contact_id!, role: "admin" }
        ], Schemas.toTimestamp(Date.now()))

        yield* inbound.learnLid(target.channelId, "555", "+4915155555555")
        const rows = yield* sql<{ id: string; contact_id: string; conversation_id: string; mentions: unknown }>`
          SELECT id, contact_id, conversation_id, mentions FROM messages WHERE id IN (${fromLid.id}, ${mention.id})`
        const byId = new Map(rows.map((r) => [r.id, r]))
        // the LID's message is the number's contact's now, still in the group chat's conversation
        assert.deepInclude(byId.get(fromLid.id), {
          contact_id: ours.contact_id!,
          conversation_id: fromLid.conversation_id
        })
        assert.deepStrictEqual(byId.get(mention.id)?.mentions, [ours.contact_id])
        const detail = Option.getOrThrow(yield* groupChats.find(target.workspaceId, fromLid.group_chat_id!))
        assert.sameDeepMembers(detail.participants.map((p) => [p.contact_id, p.role]), [
          [ours.contact_id, "member"],
          [mention.contact_id, "admin"]
        ])
        // the number's 1:1 conversation holds no group message
        const direct = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM messages
          WHERE conversation_id = ${ours.conversation_id} AND group_chat_id IS NOT NULL`
        assert.strictEqual(direct[0]!.n, 0)
      }))
  })
})
