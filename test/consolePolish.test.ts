/**
 * The console told true (docs/CONSOLE.md "Console"), each at a desktop and a phone-sized screen, in
 * a real Chromium against the whole app: a signed-out visit asks nothing of `/v1/auth/refresh`
 * (no 401 in the browser's log); inbox rows name the contact, the channel, the last message and
 * its time (five identical numbers before); "Timeline" brings the timeline into view; an expired
 * key reads expired and a revoked one revoked, neither with a Revoke button; the sandbox panel shows
 * a session opened elsewhere (the quickstart); a "Queued ..." line goes when a later send fails.
 * Screenshots: `.tmp/console-screenshots/`, and `docs/console/` with `npm run docs:console-screenshots`.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Schemas } from "@switchboard/domain"
import { InboundMessages } from "@switchboard/entities"
import { Effect, Layer, Option } from "effect"
import * as Browser from "./support/Browser.js"
import { inbound } from "./support/Conversations.js"
import { PASSWORD, request, sandboxSetup, type SignedUp, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const ME = "+4915112345678"
const OTHER = "+4915187654321"
const { patientPage: newPage, signIn, step } = Browser
const SCREENS = [["desktop", { width: 1280, height: 800 }], ["phone", { width: 390, height: 844 }]] as const

const tab = (w: Browser.Watched, name: string) =>
  step(async () => {
    await w.page.locator("nav").getByRole("button", { name }).click()
    await w.page.locator(`nav .tab[aria-current="page"]`).getByText(name).waitFor()
  })

/** Nothing wider than the screen. */
const fits = (w: Browser.Watched, width: number) =>
  Effect.gen(function*() {
    const scrollWidth = yield* step(() => w.page.evaluate<number>("document.documentElement.scrollWidth"))
    assert.isAtMost(scrollWidth, width, "no horizontal scrolling")
  })

/** As the user: `GET` with the user's session in their workspace. */
const asUser = (user: SignedUp, method: "GET" | "POST" | "DELETE", path: string, body?: unknown) =>
  request(method, path, { token: user.accessToken, workspace: user.workspaceId, ...(body ? { body } : {}) })

describe("console: told true", () => {
  layer(Layer.merge(TestApp.layer(), Browser.layer), { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.scoped(
      "a signed-out visit asks nothing of /v1/auth/refresh; a reload still signs in again",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const user = yield* signUp()
          for (const [name, screen] of SCREENS) {
            const w = yield* newPage(screen)
            const loaded = step(async () => {
              await w.page.getByRole("button", { name: "Sign in" }).waitFor()
              // start-up is over when the e-mail field has the focus
              await w.page.waitForFunction("document.activeElement?.id === 'email'")
            })
            yield* step(() => w.page.goto(`${base}/console`))
            yield* loaded
            const refreshes = () => w.requests.filter((u) => u.endsWith("/v1/auth/refresh"))
            assert.deepStrictEqual(refreshes(), [], `${name}: no refresh without a session`)
            assert.deepStrictEqual(w.consoleErrors, [], `${name}: nothing refused on load`)
            yield* Browser.docsScreenshot(w.page, `signin-${name}`)

            // signed in, a reload signs in again through the refresh cookie
            yield* step(async () => {
              await w.page.getByLabel("E-mail").fill(user.email)
              await w.page.getByLabel("Password").fill(PASSWORD)
              await w.page.getByRole("button", { name: "Sign in" }).click()
              await w.page.getByRole("heading", { name: "Channels" }).waitFor()
              await w.page.reload()
              await w.page.getByRole("heading", { name: "Channels" }).waitFor()
            })
            assert.strictEqual(refreshes().length, 1, `${name}: the reload refreshed once`)
            assert.isTrue(yield* step(() => w.page.getByRole("button", { name: "Sign out" }).isVisible()))

            // signed out, the next load asks nothing again
            yield* step(async () => {
              await w.page.getByRole("button", { name: "Sign out" }).click()
              await w.page.getByRole("button", { name: "Sign in" }).waitFor()
              await w.page.reload()
            })
            yield* loaded
            assert.strictEqual(refreshes().length, 1, `${name}: no refresh after signing out`)
            assert.deepStrictEqual(w.consoleErrors, [], `${name}: no 401 anywhere`)
          }
        }),
      300_000
    )

    it.scoped(
      "inbox rows name the contact (or number), the channel, the last message and its time",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const { key, session, user } = yield* sandboxSetup([ME, OTHER])
          const named = yield* request("POST", "/v1/contacts", {
            token: key,
            body: { phone_number: ME, name: "Ann Example" }
          })
          assert.strictEqual(named.status, 201, named.text)
          yield* inbound(key, session.id, ME, "Is my order on its way?")
          const long = `Could you tell me ${"more and more ".repeat(30)}about delivery?`
          yield* inbound(key, session.id, OTHER, long)
          const reply = yield* request("POST", "/v1/messages", {
            token: key,
            body: { channel_id: session.channel_id, to: ME, text: { body: "Yes, it ships today." } }
          })
          assert.strictEqual(reply.status, 201, reply.text)
          // the session ends and another opens: the same person on a second sandbox channel
          assert.strictEqual(
            (yield* request("DELETE", `/v1/sandbox/sessions/${session.id}`, { token: key })).status,
            200
          )
          const second = yield* request("POST", "/v1/sandbox/sessions", { token: key })
          assert.strictEqual(second.status, 201, second.text)
          const verified = yield* request("POST", `/v1/sandbox/sessions/${second.body.id}/verify`, {
            token: key,
            body: { phone_number: ME, code: second.body.verification.code }
          })
          assert.strictEqual(verified.status, 200, verified.text)
          yield* inbound(key, second.body.id, ME, "Hello from the second number")
          const channels = (yield* asUser(user, "GET", "/v1/channels?limit=100")).body.data as Array<
            { id: string; name: string }
          >
          const nameOf = (id: string) => channels.find((c) => c.id === id)!.name

          for (const [name, screen] of SCREENS) {
            const w = yield* newPage(screen)
            yield* signIn(w, base, user)
            yield* tab(w, "Inbox")
            const rows = w.page.locator("li[data-conversation]")
            yield* step(() => rows.nth(2).waitFor())
            const texts = yield* step(() => rows.allInnerTexts())
            assert.strictEqual(texts.length, 3)
            // newest first: Ann on the second channel, the other number, Ann on the first (archived)
            for (const part of ["Ann Example", ME, nameOf(second.body.channel_id), "Hello from the second number"]) {
              assert.include(texts[0], part, `${name}: first row`)
            }
            for (const part of [OTHER, nameOf(session.channel_id), "archived", "Could you tell me more"]) {
              assert.include(texts[1], part, `${name}: second row`)
            }
            for (const part of ["Ann Example", nameOf(session.channel_id), "You: Yes, it ships today."]) {
              assert.include(texts[2], part, `${name}: third row`)
            }
            assert.notStrictEqual(texts[0], texts[2], "the same person on two channels: two rows told apart")
            // each row says when its last message was
            const times = yield* step(() => rows.locator("time").allInnerTexts())
            assert.strictEqual(times.length, 3)
            for (const t of times) assert.match(t, /\d/)
            // a long last message is one line, cut with an ellipsis, on any screen
            const cut = yield* step(() =>
              rows.nth(1).locator(".conv-preview").evaluate((e) => {
                const g = globalThis as unknown as { getComputedStyle: (e: unknown) => { lineHeight: string } }
                return {
                  over: e.scrollWidth > e.clientWidth,
                  lines: Math.round(e.getBoundingClientRect().height / parseFloat(g.getComputedStyle(e).lineHeight))
                }
              })
            )
            assert.deepStrictEqual(cut, { over: true, lines: 1 }, name)
            yield* fits(w, screen.width)
            yield* Browser.docsScreenshot(w.page, `inbox-rows-${name}`)
          }
        }),
      300_000
    )

    it.scoped("Timeline brings the message's timeline into view", () =>
      Effect.gen(function*() {
        const base = yield* Browser.origin
        const { key, session, user } = yield* sandboxSetup([ME])
        for (let i = 1; i <= 20; i++) {
          const sent = yield* request("POST", "/v1/messages", {
            token: key,
            body: { channel_id: session.channel_id, to: ME, text: { body: `Update number ${i}` } }
          })
          assert.strictEqual(sent.status, 201, sent.text)
        }
        for (const [name, screen] of SCREENS) {
          const w = yield* newPage(screen)
          yield* signIn(w, base, user)
          yield* tab(w, "Messages")
          const row = w.page.locator("#messages tr", { hasText: "Update number 20" })
          yield* step(async () => {
            await w.page.locator("#messages tr", { hasText: "Update number 1" }).first().waitFor()
            await row.getByRole("button", { name: "Timeline" }).click()
            await w.page.getByRole("heading", { name: `Timeline of the message to ${ME}` }).waitFor()
          })
          const place = yield* step(() =>
            w.page.locator("#timeline").evaluate((e) => {
              const g = globalThis as unknown as {
                innerHeight: number
                document: { activeElement: { id: string } | null }
              }
              const r = e.getBoundingClientRect()
              return { top: r.top >= 0 && r.top < g.innerHeight, focused: g.document.activeElement?.id ?? "" }
            })
          )
          assert.deepStrictEqual(place, { top: true, focused: "timeline-title" }, name)
          yield* fits(w, screen.width)
          yield* Browser.docsScreenshot(w.page, `timeline-${name}`)
        }
      }), 300_000)

    it.scoped(
      "an expired key reads expired and a revoked one revoked, neither with a Revoke button",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const sql = yield* SqlClient.SqlClient
          const user = yield* signUp()
          const create = (name: string, body: Record<string, unknown> = {}) =>
            Effect.map(asUser(user, "POST", "/v1/api-keys", { name, mode: "live", ...body }), (r) => {
              assert.strictEqual(r.status, 201, r.text)
              return r.body.id as string
            })
          yield* create("Active key")
          const expiring = yield* create("Expired key", { expires_at: new Date(Date.now() + 3_600_000).toISOString() })
          // its hour has passed
          yield* sql`UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = ${expiring}`.pipe(
            Effect.orDie
          )
          const revoked = yield* create("Revoked key")
          assert.strictEqual((yield* asUser(user, "DELETE", `/v1/api-keys/${revoked}`)).status, 200)

          for (const [name, screen] of SCREENS) {
            const w = yield* newPage(screen)
            yield* signIn(w, base, user)
            yield* tab(w, "API keys & sandbox")
            const row = (key: string) => w.page.locator("#keys tr[data-key]", { hasText: key })
            yield* step(() => row("Revoked key").waitFor())
            const state = (key: string) =>
              step(async () => ({
                status: await row(key).locator(".badge").first().getAttribute("data-status"),
                revoke: await row(key).getByRole("button", { name: `Revoke ${key}` }).count()
              }))
            assert.deepStrictEqual(yield* state("Active key"), { status: "active", revoke: 1 }, name)
            assert.deepStrictEqual(yield* state("Expired key"), { status: "expired", revoke: 0 }, name)
            assert.deepStrictEqual(yield* state("Revoked key"), { status: "revoked", revoke: 0 }, name)
            assert.include(yield* step(() => row("Expired key").innerText()), "expired ")
            assert.include(yield* step(() => row("Revoked key").innerText()), "revoked ")
            // the mode stays what it was
            assert.include(yield* step(() => row("Expired key").innerText()), "live")
            yield* fits(w, screen.width)
            yield* step(() => row("Expired key").scrollIntoViewIfNeeded())
            yield* Browser.docsScreenshot(w.page, `keys-${name}`)
          }
        }),
      300_000
    )

    it.scoped(
      "the sandbox panel shows the session the quickstart opened, and manages it",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          // opened with an API key, as the quickstart does: the page has no key of its own
          const { session, user } = yield* sandboxSetup([ME])
          for (const [name, screen] of SCREENS) {
            const w = yield* newPage(screen)
            yield* signIn(w, base, user)
            yield* tab(w, "API keys & sandbox")
            const panel = w.page.locator("#sandbox-sessions")
            yield* step(() => panel.getByRole("heading", { name: `Sandbox number ${session.phone_number}` }).waitFor())
            const text = yield* step(() => panel.innerText())
            assert.include(text, "A session is open in this workspace", name)
            assert.notInclude(text, "No sandbox session", name)
            yield* fits(w, screen.width)
            yield* step(() => panel.scrollIntoViewIfNeeded())
            yield* Browser.docsScreenshot(w.page, `sandbox-elsewhere-${name}`)
            yield* step(async () => {
              await panel.getByRole("button", { name: `Manage session ${session.phone_number} here` }).click()
              await panel.locator(`[data-session="${session.id}"]`).getByText(`Verified recipients: ${ME}`).waitFor()
            })
          }
        }),
      300_000
    )

    it.scoped(
      "an inbound call reads as a call in its inbox row, its thread and Messages",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const { key, session, user } = yield* sandboxSetup([ME])
          yield* inbound(key, session.id, ME, "I will call you")
          // recorded as a QR channel records a call it hears (InboundMessages, docs/QR-CHANNELS.md "Calls")
          const calls = [
            { video: false, status: "missed", durationS: null },
            { video: false, status: "rejected", durationS: null },
            { video: true, status: "answered_elsewhere", durationS: 62 }
          ] as const
          for (const [i, call] of calls.entries()) {
            const recorded = yield* Effect.flatMap(InboundMessages.InboundMessages, (messages) =>
              messages.record({
                workspaceId: user.workspaceId,
                channelId: session.channel_id,
                channelNumber: session.phone_number,
                content: {
                  providerMessageId: `call-${i}`,
                  sender: { phoneNumber: ME, whatsappLid: null },
                  body: { _tag: "call", ...call },
                  quotedProviderMessageId: null,
                  at: Date.now()
                },
                now: Schemas.toTimestamp(Date.now() + i)
              })).pipe(Effect.provide(InboundMessages.InboundMessages.Default))
            assert.isTrue(Option.isSome(recorded))
          }
          const LINES = ["📞 Missed voice call", "📞 Voice call rejected", "📹 Video call answered on the phone (1:02)"]
          for (const [name, screen] of SCREENS) {
            const w = yield* newPage(screen)
            yield* signIn(w, base, user)
            yield* tab(w, "Inbox")
            const row = w.page.locator("li[data-conversation]", { hasText: ME })
            // the row previews the newest: the video call, with its length
            yield* step(() => row.locator(".conv-preview").getByText(LINES[2]!).waitFor())
            yield* step(async () => {
              await row.getByRole("button").click()
              await w.page.locator("#thread-messages li[data-type=call]").nth(2).waitFor()
            })
            const thread = yield* step(() =>
              w.page.locator("#thread-messages li[data-type=call] .call").allInnerTexts()
            )
            assert.deepStrictEqual(thread, LINES, name)
            // from the contact, in order after their text
            assert.include(
              yield* step(() => w.page.locator("#thread-messages li.in").first().innerText()),
              "I will call you"
            )
            assert.strictEqual(yield* step(() => w.page.locator("#thread-messages li.in[data-type=call]").count()), 3)
            yield* fits(w, screen.width)
            yield* Browser.docsScreenshot(w.page, `calls-${name}`)
            yield* tab(w, "Messages")
            const listed = yield* step(async () => {
              await w.page.locator("#messages tr[data-type=call]").nth(2).waitFor()
              return w.page.locator("#messages tr[data-type=call] .call").allInnerTexts()
            })
            assert.deepStrictEqual([...listed].reverse(), LINES, `${name}: Messages, newest first`)
          }
        }),
      300_000
    )

    it.scoped("a send's \"Queued\" line goes when a later send fails", () =>
      Effect.gen(function*() {
        const base = yield* Browser.origin
        const { user } = yield* sandboxSetup([ME])
        for (const [name, screen] of SCREENS) {
          const w = yield* newPage(screen)
          yield* signIn(w, base, user)
          yield* tab(w, "Messages")
          yield* step(async () => {
            await w.page.getByLabel("To (+country number)", { exact: true }).fill(ME)
            await w.page.getByLabel("Text", { exact: true }).fill("First try")
            await w.page.getByRole("button", { name: "Send message" }).click()
            await w.page.locator("#send-result").getByText(/^Queued msg_/).waitFor()
            // a number the sandbox session never verified is refused
            await w.page.getByLabel("To (+country number)", { exact: true }).fill("+4915100000099")
            await w.page.getByLabel("Text", { exact: true }).fill("Second try")
            await w.page.getByRole("button", { name: "Send message" }).click()
            await w.page.locator("#send-error").waitFor()
          })
          assert.strictEqual(yield* step(() => w.page.locator("#send-result").innerText()), "", name)
          yield* fits(w, screen.width)
          yield* Browser.docsScreenshot(w.page, `send-error-${name}`)
        }
      }), 300_000)
  })
})
