/**
 * The console's first hour (docs/CONSOLE.md "Console") in a real Chromium against the whole app: nothing
 * of a session before sign-in, the API's wording for a wrong password, API keys (secret shown
 * once, revoked), a sandbox session with a verified recipient, a send, an inbound message answered
 * from the inbox (read marker, notes, assignment, close and reopen), a webhook endpoint, contacts
 * (search, tags, a CSV import's per-row report) and templates (create, test-send); a keyboard-only
 * path and a phone-sized screen. Screenshots land in `.tmp/console-screenshots/`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Ids } from "@switchboard/domain"
import { Effect, Either, Layer, Schema } from "effect"
import * as Browser from "./support/Browser.js"
import { api, eventually, PASSWORD, refused, sandboxSetup, type SignedUp, signUp } from "./support/Fixtures.js"
import { receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

const ME = "+4915112345678"
/** A 1×1 PNG. */
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGMQarAGAAF1AM4Mur0zAAAAAElFTkSuQmCC"
const { patientPage: newPage, signIn, tabTo, step } = Browser
const clientOf = (user: SignedUp) => api(user.accessToken, user.workspaceId)

const tab = (w: Browser.Watched, name: string) =>
  step(async () => {
    await w.page.locator("nav").getByRole("button", { name }).click()
    await w.page.locator(`nav .tab[aria-current="page"]`).getByText(name).waitFor()
  })

/** Same origin, no CSP violation, no script error (refused calls the test makes on purpose aside). */
const assertClean = (w: Browser.Watched, base: string, allowed: RegExp = /^$/) =>
  Effect.sync(() => {
    for (const url of w.requests) {
      // the page's own files, read with the user's token into blob: URLs of the same origin
      assert.isTrue(url.startsWith(`${base}/`) || url.startsWith(`blob:${base}/`), `request outside the origin: ${url}`)
    }
    assert.deepStrictEqual(w.violations, [])
    assert.deepStrictEqual(
      w.consoleErrors.filter((e) => !allowed.test(e)),
      []
    )
  })

describe("console: the first hour without curl", () => {
  layer(Layer.merge(TestApp.layer(), Browser.layer), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "shows nothing of a session before sign-in, and the API's words for a wrong password",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const user = yield* signUp()
          const w = yield* newPage()
          yield* step(() => w.page.goto(`${base}/console`))
          yield* step(() => w.page.getByRole("button", { name: "Sign in" }).waitFor())
          assert.isFalse(yield* step(() => w.page.locator("#session").isVisible()), "no session controls")
          assert.isFalse(yield* step(() => w.page.getByRole("button", { name: "Sign out" }).isVisible()))
          assert.isFalse(yield* step(() => w.page.getByLabel("Workspace").isVisible()))
          yield* Browser.screenshot(w.page, "signin")

          const wrong = yield* refused((yield* api()).auth.login({
            payload: { email: user.email, password: "wrong password" }
          }))
          assert.strictEqual(wrong.status, 401)
          yield* step(async () => {
            await w.page.getByLabel("E-mail").fill(user.email)
            await w.page.getByLabel("Password").fill("wrong password")
            await w.page.getByRole("button", { name: "Sign in" }).click()
            await w.page.locator("#signin-error").waitFor()
          })
          assert.strictEqual(yield* step(() => w.page.locator("#signin-error").innerText()), wrong.message)
          yield* assertClean(w, base, /^401 .*\/v1\/auth\/login$/)
        }),
      180_000
    )

    it.scoped(
      "creates and revokes an API key, opens a sandbox, sends, answers from the inbox, adds an endpoint",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const user = yield* signUp()
          const w = yield* newPage()
          yield* signIn(w, base, user)

          // an API key: the secret once, copyable, working; gone when the page moves on; revoked
          yield* tab(w, "API keys & sandbox")
          yield* step(async () => {
            await w.page.getByLabel("New key name").fill("CI")
            await w.page.getByLabel("Mode").selectOption("live")
            await w.page.getByRole("button", { name: "Create API key" }).click()
            await w.page.locator("#key-secret code.secret").waitFor()
          })
          const secret = yield* step(() => w.page.locator("#key-secret code.secret").innerText())
          assert.match(secret, /^wa_live_/)
          assert.isTrue(yield* step(() => w.page.getByRole("button", { name: "Copy API key CI" }).isVisible()))
          assert.include(yield* step(() => w.page.locator("#key-secret").innerText()), "shown only once")
          const plan = Effect.flatMap(api(secret), (client) => client.plan.plan())
          assert.strictEqual((yield* plan).workspace_id, user.workspaceId)
          assert.include(yield* step(() => w.page.locator("#view-developers").innerText()), "reserved for features")
          yield* Browser.screenshot(w.page, "keys")
          yield* tab(w, "Channels")
          yield* tab(w, "API keys & sandbox")
          assert.notInclude(yield* step(() => w.page.content()), secret, "the secret is not shown again")
          yield* step(async () => {
            await w.page.getByRole("button", { name: "Revoke CI" }).click()
            await w.page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click()
            await w.page.getByRole("button", { name: "Revoke CI" }).waitFor({ state: "detached" })
          })
          const revoked = yield* eventually(
            Effect.either(refused(plan)),
            (r) => Either.isRight(r) && r.right.status === 401
          )
          assert.strictEqual(Either.getOrUndefined(revoked)?.status, 401)

          // a sandbox session: its code on the page, a recipient verified with it
          yield* step(async () => {
            await w.page.getByRole("button", { name: "Open a sandbox session" }).click()
            await w.page.locator("[data-session]").waitFor()
            await w.page.getByLabel("Recipient to verify").fill(ME)
            await w.page.getByRole("button", { name: "Verify recipient" }).click()
            await w.page.getByText(`Verified recipients: ${ME}`).waitFor()
          })
          yield* Browser.screenshot(w.page, "sandbox")

          // a send from the Messages page, seen moving to read
          yield* tab(w, "Messages")
          yield* step(async () => {
            await w.page.getByLabel("To (+country number)", { exact: true }).fill(ME)
            await w.page.getByLabel("Text", { exact: true }).fill("Hello from the console")
            await w.page.getByRole("button", { name: "Send message" }).click()
            await w.page.locator("#send-result").getByText(/^Queued msg_/).waitFor()
            await w.page.locator("#messages tr", { hasText: "Hello from the console" }).locator(
              ".badge[data-status=\"read\"]"
            )
              .waitFor()
          })

          // the recipient writes back (simulated network); the inbox shows it unread, then answers
          yield* tab(w, "API keys & sandbox")
          yield* step(async () => {
            await w.page.getByLabel("Their text").fill("Is my order on its way?")
            await w.page.getByRole("button", { name: "Simulate inbound message" }).click()
            await w.page.getByText("Received: see the Inbox.").waitFor()
          })
          yield* tab(w, "Inbox")
          const item = w.page.locator("li[data-conversation]").first()
          yield* step(() => item.getByText("1 unread").waitFor())
          yield* Browser.screenshot(w.page, "inbox-unread")
          yield* step(async () => {
            await item.getByRole("button").click()
            await w.page.locator("#thread-messages").getByText("Is my order on its way?").waitFor()
            await item.getByText("1 unread").waitFor({ state: "detached" })
            await w.page.getByLabel("Reply").fill("Yes, it ships today.")
            await w.page.getByRole("button", { name: "Send reply" }).click()
            await w.page.locator("#thread-messages").getByText("Yes, it ships today.").waitFor()
            await w.page.getByLabel("New note").fill("Asked about order 42")
            await w.page.getByRole("button", { name: "Add note" }).click()
            await w.page.locator("#notes").getByText("Asked about order 42").waitFor()
            await w.page.getByLabel("Assigned to").selectOption({ label: `Me (${user.email})` })
          })
          const client = yield* clientOf(user)
          const conversation = {
            conversationId: Schema.decodeUnknownSync(Ids.IdRef("cnv"))(
              yield* step(() => item.getAttribute("data-conversation"))
            )
          }
          const assigned = yield* eventually(
            client.conversations.get({ path: conversation }),
            (c) => c.assignee_id === user.userId
          )
          assert.strictEqual(assigned.assignee_id, user.userId)
          assert.strictEqual(assigned.unread_count, 0)
          const thread = yield* step(() => w.page.locator("#thread-messages").innerText())
          assert.include(thread, "Hello from the console")
          yield* Browser.screenshot(w.page, "inbox")
          yield* step(async () => {
            await w.page.getByRole("button", { name: "Close conversation" }).click()
            await w.page.getByRole("button", { name: "Reopen conversation" }).waitFor()
          })
          assert.strictEqual((yield* client.conversations.get({ path: conversation })).status, "closed")
          yield* step(async () => {
            await w.page.getByRole("button", { name: "Reopen conversation" }).click()
            await w.page.getByRole("button", { name: "Close conversation" }).waitFor()
          })
          assert.strictEqual((yield* client.conversations.get({ path: conversation })).status, "open")
          const notes = yield* client.conversations.notes({ path: conversation, urlParams: {} })
          assert.deepStrictEqual(notes.data.map((n) => n.body), ["Asked about order 42"])

          // the recipient sends a picture (a file from the sandbox form, its text the caption): the
          // thread draws it. The sessions reload on every visit; while they do, the last visit's
          // forms are gone (text typed into one was lost to the empty form that replaced it)
          yield* step(async () => {
            let release = () => {}
            const held = new Promise<void>((resolve) => (release = resolve))
            const sessions = (url: URL) =>
              url.pathname.endsWith("/v1/sandbox/sessions") && url.search.includes("status")
            await w.page.route(sessions, async (route) => {
              await held
              await route.continue()
            })
            await w.page.locator("nav").getByRole("button", { name: "API keys & sandbox" }).click()
            await w.page.getByText("Loading sandbox sessions…").waitFor()
            assert.strictEqual(await w.page.getByLabel("Their text").count(), 0, "no stale form while loading")
            release()
            await w.page.getByLabel("Their text").waitFor()
            await w.page.unroute(sessions)
          })
          yield* step(async () => {
            await w.page.getByLabel("Their text").fill("This parcel?")
            await w.page.getByLabel("Or a file they send").setInputFiles({
              name: "parcel.png",
              mimeType: "image/png",
              buffer: Buffer.from(PIXEL, "base64")
            })
            await w.page.getByRole("button", { name: "Simulate inbound message" }).click()
            await w.page.waitForFunction(() =>
              (globalThis as unknown as { document: any }).document.querySelector("[id^=inbound-file-]").files
                .length === 0
            )
          })
          assert.strictEqual(
            yield* step(() => w.page.locator("[id^=inbound-status-]").innerText()),
            "Received: see the Inbox."
          )
          yield* tab(w, "Inbox")
          yield* step(async () => {
            await item.getByRole("button").click()
            await w.page.locator("#thread-messages li[data-type=image]", { hasText: "This parcel?" }).waitFor()
            await w.page.waitForFunction(() =>
              (globalThis as unknown as { document: any }).document.querySelector(
                "#thread-messages li[data-type=image] img.media"
              )?.naturalWidth === 1
            )
          })

          // a webhook endpoint: its signing secret once
          const sink = yield* receiver()
          yield* tab(w, "Webhooks")
          yield* step(async () => {
            await w.page.getByLabel("URL that receives the events").fill(`${sink.url}/hooks`)
            await w.page.getByRole("button", { name: "Add endpoint" }).click()
            await w.page.locator("#endpoint-secret code.secret").waitFor()
          })
          assert.match(yield* step(() => w.page.locator("#endpoint-secret code.secret").innerText()), /^whsec_/)
          const endpoints = yield* client.webhooks.list({ urlParams: {} })
          assert.deepStrictEqual(endpoints.data.map((e) => e.url), [`${sink.url}/hooks`])
          assert.include(endpoints.data[0]!.event_types, "message.received")
          yield* Browser.screenshot(w.page, "webhooks")
          yield* assertClean(w, base, /^401 .*\/v1\/plan$/)
        }),
      300_000
    )

    it.scoped(
      "finds contacts by text and tag, edits tags, imports a CSV with its report; creates and test-sends a template",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const { user } = yield* sandboxSetup([ME])
          const w = yield* newPage()
          yield* signIn(w, base, user)
          yield* tab(w, "Contacts")
          yield* step(async () => {
            await w.page.getByLabel("Contact's number").fill("+4915100000001")
            await w.page.getByLabel("Contact's name").fill("Ann Example")
            await w.page.getByLabel("Tags (comma-separated)").fill("VIP, berlin")
            await w.page.getByRole("button", { name: "Add contact" }).click()
            await w.page.locator("#contacts tr", { hasText: "Ann Example" }).getByText("vip, berlin").waitFor()
            await w.page.getByLabel("Search contacts").fill("ann")
            await w.page.getByRole("button", { name: "Search" }).click()
            await w.page.locator("#contacts-count").getByText("1 shown").waitFor()
            w.page.once("dialog", (d) => d.accept("vip, hamburg"))
            await w.page.getByRole("button", { name: "Edit tags of Ann Example" }).click()
            await w.page.locator("#contacts tr", { hasText: "Ann Example" }).getByText("vip, hamburg").waitFor()
            await w.page.getByLabel("Search contacts").fill("")
            await w.page.getByLabel("Tag", { exact: true }).selectOption("hamburg")
            await w.page.getByRole("button", { name: "Search" }).click()
            await w.page.locator("#contacts-count").getByText("1 shown").waitFor()
          })
          const csv = "phone_number,name\n+4915100000002,Bob\nnot a number,Carl\n+4915100000003,Dora\n"
          yield* step(async () => {
            await w.page.getByLabel("CSV file", { exact: true }).setInputFiles({
              name: "contacts.csv",
              mimeType: "text/csv",
              buffer: Buffer.from(csv)
            })
            await w.page.getByLabel("Tags for every imported contact").fill("imported")
            await w.page.getByRole("button", { name: "Import", exact: true }).click()
            await w.page.locator("#import-summary .badge[data-status=\"completed\"]").waitFor()
          })
          assert.include(yield* step(() => w.page.locator("#import-summary").innerText()), "2 created")
          const report = yield* step(() => w.page.locator("#import-errors tbody tr").allInnerTexts())
          assert.strictEqual(report.length, 1)
          assert.include(report[0], "invalid_phone_number")
          assert.notInclude(report.join(" "), "not a number", "never a cell's value")
          yield* Browser.screenshot(w.page, "contacts")

          yield* tab(w, "Templates")
          yield* step(async () => {
            await w.page.getByLabel("Slug").fill("order_ready")
            await w.page.getByLabel("Template name").fill("Order ready")
            await w.page.getByLabel("Body").fill("Hi {{name}}, your order is ready.")
            await w.page.getByRole("button", { name: "Create template" }).click()
            await w.page.getByRole("button", { name: "Test-send Order ready" }).click()
            await w.page.getByLabel("Send the test to").fill(ME)
            await w.page.getByLabel("Value of {{name}}").fill("Ann")
            await w.page.getByRole("button", { name: "Send test" }).click()
            await w.page.locator("#test-result").getByText(/^Sent msg_/).waitFor()
          })
          assert.include(yield* step(() => w.page.locator("#test-result").innerText()), "Hi Ann, your order is ready.")
          yield* Browser.screenshot(w.page, "templates")
          yield* assertClean(w, base)
        }),
      180_000
    )

    it.scoped(
      "works with the keyboard only: sign in, create a key, reply from the inbox",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const { key, session, user } = yield* sandboxSetup([ME])
          // the typed client decodes the declared 202 only
          yield* (yield* api(key)).sandbox.inbound({
            path: { sessionId: session.id },
            payload: { from: ME, text: { body: "Hello by keyboard" } }
          })
          const w = yield* newPage()
          yield* step(async () => {
            await w.page.goto(`${base}/console`)
            await w.page.waitForFunction(() =>
              (globalThis as unknown as { document: any }).document.activeElement?.id === "email"
            )
            await w.page.keyboard.type(user.email)
            await w.page.keyboard.press("Tab")
            await w.page.keyboard.type(PASSWORD)
            await w.page.keyboard.press("Enter")
            await w.page.getByRole("heading", { name: "Channels" }).waitFor()
          })
          yield* tabTo(w, /^API keys & sandbox$/)
          yield* step(() => w.page.keyboard.press("Enter"))
          yield* tabTo(w, /^New key name$/)
          yield* step(async () => {
            await w.page.keyboard.type("Keyboard key")
            await w.page.keyboard.press("Enter")
            await w.page.getByRole("button", { name: "Copy API key Keyboard key" }).waitFor()
          })
          // the copy button takes the focus, next to the secret
          const focusedText = yield* eventually(
            step(() => w.page.evaluate<string>("document.activeElement?.textContent ?? ''")),
            (t) => t === "Copy API key Keyboard key",
            5_000
          )
          assert.strictEqual(focusedText, "Copy API key Keyboard key")
          const focusRing = yield* step(() =>
            w.page.evaluate<string>("getComputedStyle(document.activeElement).outlineStyle")
          )
          assert.notStrictEqual(focusRing, "none")
          yield* step(() => w.page.keyboard.press("Shift+Tab"))
          yield* tabTo(w, /^Inbox$/)
          yield* step(() => w.page.keyboard.press("Enter"))
          yield* step(() => w.page.locator("li[data-conversation]").first().waitFor())
          yield* tabTo(w, /1 unread/)
          yield* step(async () => {
            await w.page.keyboard.press("Enter")
            await w.page.locator("#thread-messages").getByText("Hello by keyboard").waitFor()
          })
          yield* tabTo(w, /^Reply$/)
          yield* step(() => w.page.keyboard.type("Answered without a mouse"))
          yield* tabTo(w, /^Send reply$/)
          yield* step(async () => {
            await w.page.keyboard.press("Enter")
            await w.page.locator("#thread-messages").getByText("Answered without a mouse").waitFor()
          })
          yield* Browser.screenshot(w.page, "keyboard-inbox")
          const keys = yield* (yield* clientOf(user)).apiKeys.list({ urlParams: {} })
          assert.include(keys.data.map((k) => k.name), "Keyboard key")
          yield* assertClean(w, base)
        }),
      180_000
    )

    it.scoped("fits a phone-sized screen: inbox, keys and sandbox", () =>
      Effect.gen(function*() {
        const base = yield* Browser.origin
        const { key, session, user } = yield* sandboxSetup([ME])
        yield* (yield* api(key)).sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: ME, text: { body: "Hello from a small screen" } }
        })
        const w = yield* newPage({ width: 390, height: 844 })
        yield* signIn(w, base, user)
        const noSideScroll = Effect.gen(function*() {
          const width = yield* step(() => w.page.evaluate<number>("document.documentElement.scrollWidth"))
          assert.isAtMost(width, 390, "no horizontal scrolling on a phone")
        })
        yield* tab(w, "Inbox")
        yield* step(async () => {
          await w.page.locator("li[data-conversation] button").first().click()
          await w.page.locator("#thread-messages").getByText("Hello from a small screen").waitFor()
        })
        yield* noSideScroll
        yield* Browser.screenshot(w.page, "phone-inbox")
        yield* tab(w, "API keys & sandbox")
        yield* step(() => w.page.locator("#keys tbody tr").first().waitFor())
        yield* noSideScroll
        yield* tab(w, "Contacts")
        yield* noSideScroll
        yield* tab(w, "Templates")
        yield* noSideScroll
        yield* assertClean(w, base)
      }), 180_000)

    it.scoped("renders a message by its type, and a kind it does not know by its name", () =>
      Effect.gen(function*() {
        const base = yield* Browser.origin
        const w = yield* newPage()
        yield* step(() => w.page.goto(`${base}/console`))
        const shown = yield* step(() =>
          w.page.evaluate<Array<string>>(`import("${base}/console/lib.mjs").then(({ messageText }) => [
            messageText({ type: "text", text: { body: "plain" } }),
            messageText({ type: "template", text: { body: "rendered" } }),
            messageText({ type: "image", image: { media_id: "med_1" }, text: { body: "a caption" } }),
            messageText({ type: "location", location: { latitude: 1, longitude: 2 } }),
            messageText({ type: "sticker_pack" }),
            messageText({})
          ])`)
        )
        assert.deepStrictEqual(shown, ["plain", "rendered", "a caption", "[location]", "[sticker pack]", "[message]"])
      }))
  })
})
