/**
 * Text WhatsApp hands over is recorded whatever characters it holds: Postgres text and jsonb cannot
 * hold U+0000, so a contact's message (or a group's subject) carrying it is recorded with U+FFFD in
 * its place rather than lost (docs/QR-CHANNELS.md "What a QR channel records", "Group chats").
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, eventually } from "./support/Fixtures.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"

describe("QR inbound text with U+0000", () => {
  layer(appWith({ phoneNumber: "+15550006262" }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("records a text holding U+0000 with U+FFFD in its place, and the message after it", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel()
        const client = yield* api(user.accessToken, user.workspaceId)
        const contact = wa.contact("+4915112346262")
        const group = wa.group({ subject: "Shop\u0000EU", members: [contact], description: "x\u0000y" })
        yield* contact.says("a\u0000b")
        yield* contact.says("after")
        const page = yield* eventually(
          client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId, limit: 100 } }),
          (p) => p.data.length >= 2,
          30_000
        )
        assert.deepStrictEqual(page.data.map((m) => m.text?.body).sort(), ["after", "a\uFFFDb"])
        // a group's subject and description the same way, read when the group changes
        yield* group.setsSubject("Shop\u0000EU!", { by: contact })
        const chats = yield* eventually(
          client.groupChats.list({ path: { channelId }, urlParams: { limit: 100 } }),
          (p) => p.data.some((g) => g.subject === "Shop\uFFFDEU!"),
          30_000
        )
        assert.strictEqual(chats.data.find((g) => g.whatsapp_group_id === group.id)?.description, "x\uFFFDy")
      }))
  })
})
