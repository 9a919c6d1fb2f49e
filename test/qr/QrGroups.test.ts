/**
 * Group chats through the real Baileys client and the fake WhatsApp server, which speaks groups as
 * WhatsApp does (test/fake-whatsapp/FakeGroups.ts): a member's message is encrypted with the
 * member's sender key (`skmsg`), the key distributed to the linked device in a `pkmsg` the first
 * time; what the device sends to a group reaches each member under the device's own sender key.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { QrAuthStateRepo } from "@switchboard/providers"
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
