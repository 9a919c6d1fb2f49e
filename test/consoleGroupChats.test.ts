/**
 * Group chats in the console's inbox (docs/CONSOLE.md "Inbox") in a real Chromium against the whole
 * app, with a group chat the sandbox simulates: its conversation is named by the group's subject,
 * each message by the participant who wrote it, and a reply typed in the thread goes to the group
 * chat.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Browser from "./support/Browser.js"
import { api, eventually, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const ALICE = "+4915112340601"
const BOB = "+4915112340602"
const { patientPage: newPage, signIn, step } = Browser

describe("console: group chats in the inbox", () => {
  layer(Layer.merge(TestApp.layer(), Browser.layer), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("names a group chat by its subject and each message by who wrote it; a reply goes to the group", () =>
      Effect.gen(function*() {
        const base = yield* Browser.origin
        const { key, session, user } = yield* sandboxSetup([ALICE, BOB])
        const client = yield* api(key)
        const chat = yield* client.sandbox.createGroupChat({
          path: { sessionId: session.id },
          payload: { subject: "Night shift", participants: [ALICE, BOB] }
        })
        const inbound = (from: string, body: string) =>
          client.sandbox.inbound({
            path: { sessionId: session.id },
            payload: { from, group_chat_id: chat.id, text: { body } }
          })
        yield* inbound(ALICE, "Who opens tomorrow?")
        yield* inbound(BOB, "I do")

        const w = yield* newPage()
        yield* signIn(w, base, user)
        yield* step(async () => {
          await w.page.locator("nav").getByRole("button", { name: "Inbox" }).click()
        })
        const row = w.page.locator("li[data-conversation]", { hasText: "Group: Night shift" })
        yield* step(() => row.getByText("2 unread").waitFor())
        yield* step(() => row.getByRole("button").click())
        const thread = w.page.locator("#thread-messages")
        yield* step(() => thread.getByText("I do").waitFor())
        assert.strictEqual(
          yield* step(() => w.page.locator("#thread-title").innerText()),
          "Group: Night shift (2 participants)"
        )
        const labels = yield* step(() => thread.locator("li > span.muted").allInnerTexts())
        assert.isTrue(labels[0]!.startsWith(`${ALICE} · `), labels.join(" | "))
        assert.isTrue(labels[1]!.startsWith(`${BOB} · `), labels.join(" | "))
        yield* Browser.screenshot(w.page, "inbox-group-chat")

        // a reply from the thread goes to the group chat
        yield* step(async () => {
          await w.page.locator("#reply-text").fill("Thanks, Bob")
          await w.page.getByRole("button", { name: "Send reply" }).click()
          await thread.getByText("Thanks, Bob").waitFor()
        })
        const sent = yield* eventually(
          client.messages.list({ urlParams: { direction: "outbound", channel_id: session.channel_id } }),
          (p) => p.data.length === 1
        )
        assert.deepInclude(sent.data[0], { group_chat_id: chat.id, contact_id: null, text: { body: "Thanks, Bob" } })
      }))
  })
})
