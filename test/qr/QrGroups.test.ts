/**
 * Group chats through the real Baileys client and the fake WhatsApp server, which speaks groups as
 * WhatsApp does (test/fake-whatsapp/FakeGroups.ts): a member's message is encrypted with the
 * member's sender key (`skmsg`), the key distributed to the linked device in a `pkmsg` the first
 * time; what the device sends to a group reaches each member under the device's own sender key.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
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
