/**
 * Group chats through the real Baileys client and the fake WhatsApp server, which speaks groups as
 * WhatsApp does (test/fake-whatsapp/FakeGroups.ts): a member's message is encrypted with the
 * member's sender key (`skmsg`), the key distributed to the linked device in a `pkmsg` the first
 * time; what the device sends to a group reaches each member under the device's own sender key.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { GroupChats } from "@switchboard/domain"
import { QrAuthStateRepo, type QrConnectionEvent } from "@switchboard/providers"
import { Effect, Layer, Logger } from "effect"
import { FakeWhatsApp } from "../fake-whatsapp/index.js"
import { connect, is, newChannelId, type Observed, pair } from "./QrHarness.js"

const TestLayer = QrAuthStateRepo.QrAuthStateRepo.Default.pipe(
  Layer.provideMerge(TestDatabase.sqlLayer),
  Layer.provideMerge(Logger.replace(Logger.defaultLogger, Logger.none))
)

const inboundWithId = (a: Observed, id: string) =>
  Effect.map(
    a.next(is("inbound", (e) => e.content.providerMessageId === id), `inbound ${id}`),
    (e) => e.content
  )

const paired = Effect.gen(function*() {
  const wa = yield* FakeWhatsApp.scoped()
  const channelId = yield* newChannelId
  const a = yield* connect(wa, { channelId })
  yield* pair(wa, a)
  return { wa, a, channelId }
})

describe("QR group chats", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("reports members' texts in a group (sender keys), with the group and the member who wrote", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const alice = wa.contact("+447700900401")
        const bob = wa.contact("+447700900402")
        const team = wa.group({ subject: "Team", members: [alice, bob], admins: [alice] })

        // the first message of each member carries its sender key; the next ones are skmsg alone
        const first = yield* inboundWithId(a, yield* alice.says("hello team", { group: team }))
        const second = yield* inboundWithId(a, yield* alice.says("still here", { group: team }))
        const fromBob = yield* inboundWithId(a, yield* bob.says("hi alice", { group: team }))

        assert.deepStrictEqual(team.delivered.map((d) => d.encs), [["pkmsg", "skmsg"], ["skmsg"], ["pkmsg", "skmsg"]])
        assert.deepStrictEqual(
          [first, second, fromBob].map((c) => [c.body, c.sender.phoneNumber, c.groupChat]),
          [
            [{ _tag: "text", body: "hello team" }, alice.number, { whatsappGroupId: team.id }],
            [{ _tag: "text", body: "still here" }, alice.number, { whatsappGroupId: team.id }],
            [{ _tag: "text", body: "hi alice" }, bob.number, { whatsappGroupId: team.id }]
          ]
        )
      }))

    it.scoped("reports a group member WhatsApp names by LID, with the number beside it, and mentions", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const carol = wa.contact("+447700900403")
        const dave = wa.contact("+447700900404")
        const lidGroup = wa.group({ subject: "By LID", members: [carol, dave], addressing: "lid" })

        const id = yield* carol.sends({
          extendedTextMessage: { text: "@dave look", contextInfo: { mentionedJid: [`${dave.lidUser}@lid`] } }
        }, { group: lidGroup })
        const content = yield* inboundWithId(a, id)
        assert.deepStrictEqual(content.sender, { phoneNumber: carol.number, whatsappLid: carol.lidUser })
        assert.deepStrictEqual(content.groupChat, { whatsappGroupId: lidGroup.id })
        assert.deepStrictEqual(content.mentions, [{ phoneNumber: null, whatsappLid: dave.lidUser }])
      }))

    it.scoped("reports the group chats the number is in when the link opens, with roles and settings", () =>
      Effect.gen(function*() {
        const wa = yield* FakeWhatsApp.scoped()
        const alice = wa.contact("+447700900411")
        const bob = wa.contact("+447700900412")
        const team = wa.group({
          subject: "Team",
          members: [alice, bob],
          admins: [alice],
          description: "Orders and shifts",
          announceOnly: true,
          weAreAdmin: true
        })
        wa.group({ subject: "Old", members: [alice], withoutUs: true })
        const a = yield* connect(wa, { channelId: yield* newChannelId })
        yield* pair(wa, a)

        const synced = yield* a.next(is("group_chats", (e) => e.complete), "the group chats at link open")
        assert.deepStrictEqual(synced.left, [])
        assert.deepStrictEqual(synced.groupChats, [{
          whatsappGroupId: team.id,
          subject: "Team",
          description: "Orders and shifts",
          announceOnly: true,
          isAdmin: true,
          participants: [
            { phoneNumber: alice.number, whatsappLid: null, role: "superadmin" },
            { phoneNumber: bob.number, whatsappLid: null, role: "member" }
          ]
        }])
      }))

    it.scoped("reports a group again when WhatsApp notifies a change, and as left once our number is removed", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const alice = wa.contact("+447700900421")
        const carol = wa.contact("+447700900423")
        const team = wa.group({ subject: "Team", members: [alice], admins: [alice] })
        const changed = (what: string, where: (e: QrConnectionEvent.QrGroupChatsEvent) => boolean) =>
          a.next(is("group_chats", (e) => !e.complete && where(e)), what)

        yield* team.adds(carol, { by: alice })
        const added = yield* changed("carol joined", (e) => e.groupChats[0]?.participants.length === 2)
        assert.deepStrictEqual(added.groupChats[0]?.participants.map((p) => p.phoneNumber), [
          alice.number,
          carol.number
        ])
        yield* team.setsSubject("Team 2", { by: alice })
        yield* changed("the new subject", (e) => e.groupChats[0]?.subject === "Team 2")
        yield* team.setsAnnounceOnly(true, { by: alice })
        yield* changed("announce-only", (e) => e.groupChats[0]?.announceOnly === true)
        yield* team.promotes(undefined, { by: alice })
        yield* changed("our number promoted", (e) => e.groupChats[0]?.isAdmin === true)
        yield* team.removes(carol, { by: alice })
        yield* changed("carol removed", (e) => e.groupChats[0]?.participants.length === 1)
        yield* team.removesUs({ by: alice })
        const left = yield* changed("our number removed", (e) => e.left.length > 0)
        assert.deepStrictEqual([left.left, left.groupChats], [[team.id], []])
      }))

    it.scoped("sends to a group chat: each member decrypts it with the device's sender key; the first receipts move it", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const alice = wa.contact("+447700900431")
        const bob = wa.contact("+447700900432")
        const team = wa.group({ subject: "Team", members: [alice, bob] })
        const to = GroupChats.groupChatAddress(team.id)
        const decrypted = (id: string) => team.received.filter((r) => r.id === id).map((r) => [r.member, r.text])

        const first = "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2A"
        yield* a.connection.send({ messageId: first, to, text: "hello team" })
        yield* wa.until(() => decrypted(first).length === 2)
        assert.sameDeepMembers(decrypted(first), [[alice.user, "hello team"], [bob.user, "hello team"]])
        // the second goes under the sender key the members already have
        const second = "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2B"
        yield* a.connection.send({ messageId: second, to, text: "and again" })
        yield* wa.until(() => decrypted(second).length === 2)
        // sent, then delivered and read once the first member's receipts come (each reported once)
        yield* a.next(is("receipt", (e) => e.messageId === first && e.status === "read"), "read of the first")
        const statuses = a.seen.filter(is("receipt", (e) => e.messageId === first)).map((e) => e.status)
        assert.deepStrictEqual(statuses, ["sent", "delivered", "read"])
      }))

    it.scoped("a group where only admins write refuses our message; one our number left fails it", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const alice = wa.contact("+447700900441")
        const announce = wa.group({ subject: "News", members: [alice], admins: [alice], announceOnly: true })
        const messageId = "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2C"
        yield* a.connection.send({ messageId, to: GroupChats.groupChatAddress(announce.id), text: "may I?" })
        const rejected = yield* a.next(is("rejected", (e) => e.messageId === messageId), "the refusal")
        assert.deepStrictEqual([rejected.code, rejected.retryable], ["provider_rejected", false])
        assert.deepStrictEqual(announce.refused, [messageId])

        const gone = wa.group({ subject: "Gone", members: [alice], withoutUs: true })
        const failed = yield* Effect.flip(
          a.connection.send({
            messageId: "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2D",
            to: GroupChats.groupChatAddress(gone.id),
            text: "hello?"
          })
        )
        assert.strictEqual(failed._tag, "QrSendFailed")
        assert.deepStrictEqual(gone.received, [])
      }))

    it.scoped("asks a member again for a group message it could not decrypt, and reports it once it can", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const erin = wa.contact("+447700900405")
        const group = wa.group({ subject: "Noisy", members: [erin] })
        yield* inboundWithId(a, yield* erin.says("first", { group }))

        const id = yield* erin.says("damaged", { group, garbled: true })
        const content = yield* a.next(
          is("inbound", (e) => e.content.providerMessageId === id && e.content.body._tag === "text"),
          "the group text sent again"
        )
        assert.deepStrictEqual(content.content.body, { _tag: "text", body: "damaged" })
        assert.isTrue(wa.retryRequests.includes(id))
      }))
  })
})
