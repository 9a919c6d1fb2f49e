/**
 * The console's inbox live (docs/CONSOLE.md "Inbox") in a real Chromium against the whole app: new
 * conversations and messages appear without a reload and unread counts move (polled); a message
 * that arrives in the open conversation is read there; a conversation is assigned to a colleague
 * (any member of the workspace, from GET /v1/workspace/members) with the keyboard only; and the
 * thread with a picture fits a phone-sized screen.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import type { SandboxInbound } from "@switchboard/domain"
import { Effect, Layer } from "effect"
import * as Browser from "./support/Browser.js"
import { api, eventually, refused, sandboxSetup, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const ME = "+4915112345678"
const OTHER = "+4915187654321"
const { patientPage: newPage, signIn, tabTo, step } = Browser
/** A 1×1 PNG. */
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGMQarAGAAF1AM4Mur0zAAAAAElFTkSuQmCC"

describe("console: the inbox, live", () => {
  layer(Layer.merge(TestApp.layer(), Browser.layer), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "shows new conversations and messages without a reload, assigns to a colleague by keyboard, fits a phone",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const sql = yield* SqlClient.SqlClient
          const { key, session, user } = yield* sandboxSetup([ME, OTHER])
          // a colleague in the same workspace (there is no invitation flow yet: the membership row)
          const colleague = yield* signUp()
          yield* sql`INSERT INTO workspace_members (workspace_id, user_id, role, created_at)
            VALUES (${user.workspaceId}, ${colleague.userId}, 'member', now())`
          const owner = yield* api(user.accessToken, user.workspaceId)
          const members = yield* owner.session.members({ urlParams: {} })
          assert.deepStrictEqual(
            members.data.map((m) => [m.id, m.email, m.role]),
            [[user.userId, user.email, "owner"], [colleague.userId, colleague.email, "member"]]
          )
          assert.strictEqual((yield* refused((yield* api(key)).session.members({ urlParams: {} }))).status, 403)

          const sandbox = (yield* api(key)).sandbox
          const inbound = (from: string, body: Omit<SandboxInbound.SandboxInboundRequest, "from">) =>
            Effect.tap(
              sandbox.inbound({ path: { sessionId: session.id }, payload: { from, ...body }, withResponse: true }),
              ([, response]) => Effect.sync(() => assert.strictEqual(response.status, 202))
            )

          const w = yield* newPage()
          yield* signIn(w, base, user)
          yield* step(async () => {
            await w.page.locator("nav").getByRole("button", { name: "Inbox" }).click()
            await w.page.locator("#conversations").getByText("No conversations.").waitFor()
          })

          // a first message: its conversation appears, unread, without a reload; a second one counts
          yield* inbound(ME, { text: { body: "Hello, are you open today?" } })
          const mine = w.page.locator("li[data-conversation]", { hasText: ME })
          yield* step(() => mine.getByText("1 unread").waitFor())
          yield* inbound(ME, { text: { body: "And tomorrow?" } })
          yield* step(() => mine.getByText("2 unread").waitFor())
          yield* step(() => w.page.locator("#inbox-unread").getByText("2 unread").waitFor())
          yield* inbound(OTHER, { text: { body: "Do you deliver?" } })
          const theirs = w.page.locator("li[data-conversation]", { hasText: OTHER })
          yield* step(() => theirs.getByText("1 unread").waitFor())
          // newest first
          assert.include(yield* step(() => w.page.locator("li[data-conversation]").first().innerText()), OTHER)
          assert.strictEqual(yield* step(() => w.page.locator("#inbox-unread").innerText()), "3 unread")
          yield* Browser.screenshot(w.page, "inbox-live")

          // keyboard only: Tab to the conversation, Enter opens it, its messages show, the count goes
          yield* tabTo(w, new RegExp(`^${ME.replace("+", "\\+")}`))
          yield* step(() => w.page.keyboard.press("Enter"))
          const thread = w.page.locator("#thread-messages")
          yield* step(async () => {
            await thread.getByText("And tomorrow?").waitFor()
            await mine.getByText("unread").waitFor({ state: "detached" })
          })
          // a message that arrives while the conversation is open shows up and is read there
          yield* inbound(ME, { text: { body: "Hello again?" } })
          yield* step(() => thread.getByText("Hello again?").waitFor())
          const conversationId = yield* step(() => mine.getAttribute("data-conversation"))
          const conversation = owner.conversations.get({ path: { conversationId: conversationId as `cnv_${string}` } })
          const read = yield* eventually(conversation, (c) => c.unread_count === 0 && c.last_read_at !== null)
          assert.strictEqual(read.unread_count, 0)

          // assign it to the colleague: Tab to "Assigned to", arrow keys to choose
          yield* tabTo(w, /^Assigned to$/)
          const options = yield* step(() => w.page.locator("#thread-assignee option").allInnerTexts())
          assert.deepStrictEqual(options, ["Nobody", `Me (${user.email})`, `Test User (${colleague.email})`])
          // each step writes; the first step's write reaches the server 1.5 s late, as a loaded
          // machine can make it: it must not land after the second and leave "Me" assigned
          let delayed = false
          yield* step(() =>
            w.page.route(`**/v1/conversations/${conversationId}`, async (route) => {
              if (route.request().method() === "PATCH" && !delayed) {
                delayed = true
                await new Promise((r) => setTimeout(r, 1_500))
              }
              await route.continue()
            })
          )
          yield* step(async () => {
            await w.page.keyboard.press("ArrowDown")
            await w.page.keyboard.press("ArrowDown")
          })
          const assigned = yield* eventually(conversation, (c) => c.assignee_id === colleague.userId)
          assert.strictEqual(assigned.assignee_id, colleague.userId)
          // after the late write and the next refreshes, the colleague still, on the server and the page
          yield* step(() => w.page.waitForTimeout(3500))
          assert.isTrue(delayed)
          assert.strictEqual((yield* conversation).assignee_id, colleague.userId)
          assert.strictEqual(
            yield* step(() => w.page.locator("#thread-assignee option:checked").innerText()),
            `Test User (${colleague.email})`
          )
          yield* Browser.screenshot(w.page, "inbox-assign")

          // a phone-sized screen: the list, then the thread with a picture, nothing wider than the screen
          yield* inbound(ME, { image: { data_base64: PIXEL, mime_type: "image/png", caption: "Our shop front" } })
          const phone = yield* newPage({ width: 390, height: 844 })
          yield* signIn(phone, base, user)
          yield* step(async () => {
            await phone.page.locator("nav").getByRole("button", { name: "Inbox" }).click()
            await phone.page.locator("li[data-conversation]", { hasText: ME }).getByRole("button").click()
            await phone.page.locator("#thread-messages li[data-type=image] img.media").waitFor()
            await phone.page.waitForFunction(() =>
              (globalThis as unknown as { document: any }).document.querySelector(
                "#thread-messages li[data-type=image] img.media"
              )?.naturalWidth === 1
            )
          })
          const width = yield* step(() => phone.page.evaluate<number>("document.documentElement.scrollWidth"))
          const wide = yield* step(() =>
            phone.page.evaluate<string>(`[...document.querySelectorAll("body *")]
              .filter((e) => e.getBoundingClientRect().right > 390 && e.getClientRects().length > 0)
              .map((e) => e.tagName + (e.id ? "#" + e.id : "") + "." + e.className).join(" ")`)
          )
          assert.isAtMost(width, 390, `nothing is wider than the phone's screen: ${wide}`)
          yield* Browser.screenshot(phone.page, "phone-thread")
        }),
      200_000
    )
  })
})
