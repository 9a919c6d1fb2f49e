/**
 * The console (docs/CONSOLE.md "Console") in a real Chromium against the whole app and the fake WhatsApp
 * server with real Baileys: sign in, channels, QR pairing seen as an SVG and scanned by the fake
 * phone, messages moving to `read` with their timeline, a failed webhook delivery replayed, a
 * keyboard-only path and a phone-sized screen. Every request stays on the origin; no CSP violation.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Ids } from "@switchboard/domain"
import { Effect, Layer, Option, Schema } from "effect"
import qrcode from "qrcode-generator"
import * as Browser from "./support/Browser.js"
import { api, eventually, PASSWORD, request, signUp } from "./support/Fixtures.js"
import { appWith, as, createQrChannel, sendText, Wa, waitForStatus } from "./support/QrApp.js"
import { receiver } from "./support/Receiver.js"
import * as Sse from "./support/SseClient.js"

const PHONE = "+15550008888"
const { signIn, step } = Browser

const badgeIn = (w: Browser.Watched, row: string, status: string) =>
  w.page.locator(`${row} .badge[data-status="${status}"]`)

/** Same origin, no CSP violation, no script error. */
const assertClean = (w: Browser.Watched, base: string) =>
  Effect.sync(() => {
    assert.isAbove(w.requests.length, 0)
    for (const url of w.requests) {
      // the page's own files, read with the user's token into blob: URLs of the same origin
      assert.isTrue(url.startsWith(`${base}/`) || url.startsWith(`blob:${base}/`), `request outside the origin: ${url}`)
    }
    assert.deepStrictEqual(w.violations, [])
    // nothing refused, a signed-out load's refresh included (the page asks only with the `signed_in` hint)
    assert.deepStrictEqual(w.consoleErrors, [])
  })

describe("console", () => {
  layer(Layer.merge(appWith({ phoneNumber: PHONE }), Browser.layer), { excludeTestServices: true, timeout: 240_000 })(
    (it) => {
      it.effect("is one static page with a strict CSP and our own QR library", () =>
        Effect.gen(function*() {
          // raw: the console's static files are no endpoint of the contract (their headers are read)
          const page = yield* request("GET", "/console")
          assert.strictEqual(page.status, 200)
          assert.include(page.headers["content-type"], "text/html")
          assert.include(page.headers["content-security-policy"], "default-src 'self'")
          assert.notInclude(page.headers["content-security-policy"], "unsafe-inline")
          assert.notMatch(page.text, /<script>|<script [^>]*>[^<]+<\/script>|style="|https?:\/\//)
          // raw: a static file of the console, its Content-Type read
          const lib = yield* request("GET", "/console/qrcode.mjs")
          assert.strictEqual(lib.status, 200)
          assert.include(lib.headers["content-type"], "javascript")
          // raw: a path out of the console's directory, sent as it is on purpose
          assert.strictEqual((yield* request("GET", "/console/../package.json")).status, 404)
          // raw: a file beside the console's that it must not serve (no endpoint of the contract)
          assert.strictEqual((yield* request("GET", "/console/node_modules/qrcode-generator/package.json")).status, 404)
        }))

      it.scoped("signs in, links a number by QR, watches a message reach read, archives", () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const base = yield* Browser.origin
          const user = yield* signUp()
          const w = yield* Browser.newPage()
          yield* signIn(w, base, user)
          yield* Browser.screenshot(w.page, "channels-empty")

          // the access token is in memory only: not in storage, not in the URL, not a readable cookie
          // (the one cookie the page reads is the server's `signed_in=1` hint: no secret in it)
          const kept = yield* step(() =>
            w.page.evaluate<{ local: number; session: number; url: string; cookie: string }>(
              "({ local: localStorage.length, session: sessionStorage.length, url: location.href, cookie: document.cookie })"
            )
          )
          assert.strictEqual(kept.local, 0)
          assert.strictEqual(kept.session, 0)
          assert.strictEqual(kept.cookie, "signed_in=1")
          assert.isAbove(w.tokens.size, 0)
          for (const token of w.tokens) assert.notInclude(kept.url, token)

          // create, rename (prompt), start pairing
          yield* step(async () => {
            await w.page.getByLabel("New QR channel name").fill("Shop")
            await w.page.getByRole("button", { name: "Create QR channel" }).click()
            await w.page.getByRole("button", { name: "Rename Shop" }).waitFor()
            w.page.once("dialog", (d) => d.accept("Front desk"))
            await w.page.getByRole("button", { name: "Rename Shop" }).click()
            // the first stream connection is cut: the page says so and reconnects with back-off
            await w.page.route("**/qr/stream", (route) => route.abort("connectionreset"))
            await w.page.getByRole("button", { name: "Link Front desk" }).click()
            await w.page.getByText(/The live connection dropped; reconnecting in \d+ s/).waitFor()
            await w.page.unroute("**/qr/stream")
            await w.page.locator("#qr svg").waitFor({ timeout: 30_000 })
          })
          const attribute = yield* step(() => w.page.locator("tr[data-channel]").first().getAttribute("data-channel"))
          assert.isNotNull(attribute)
          const channelId = Schema.decodeUnknownSync(Ids.IdRef("ch"))(attribute)
          const client = yield* api(user.accessToken, user.workspaceId)
          const named = yield* client.channels.get({ path: { channelId } })
          assert.strictEqual(named.name, "Front desk")
          yield* Browser.screenshot(w.page, "pairing")

          // the code the page shows is the one showing now: read it as the phone would
          const watcher = yield* Sse.open(`/v1/channels/${channelId}/qr/stream`, as(user))
          const snapshot = Option.getOrThrow(yield* watcher.next())
          assert.strictEqual(snapshot.event, "snapshot")
          const code: string = snapshot.data.qr
          const expected = qrcode(0, "M")
          expected.addData(code)
          expected.make()
          // the same modules as the library draws for that code (the browser re-serialises the rest)
          const modules = (svg: string) => /<path d="([^"]+)"/.exec(svg)?.[1]
          const drawn = yield* step(() => w.page.locator("#qr").innerHTML())
          assert.isString(modules(drawn))
          assert.strictEqual(modules(drawn), modules(expected.createSvgTag({ cellSize: 4, margin: 4, scalable: true })))
          assert.match(yield* step(() => w.page.locator("#countdown").innerText()), /Code valid for \d+ s/)
          // the stream is read with the Authorization header, never a token in its URL
          const streamUrls = w.requests.filter((u) => u.includes("/qr/stream"))
          assert.isAtLeast(streamUrls.length, 2, "the page opened the stream again after the cut")
          for (const url of streamUrls) assert.notInclude(url, "token")

          yield* wa.phone.scan(code)
          yield* step(() =>
            w.page.getByText(`Connected as ${PHONE}.`).waitFor({ timeout: 30_000 }).catch(async (e) => {
              await w.page.screenshot({ path: `${Browser.ARTIFACTS}/failed-pairing.png` })
              throw new Error(`${String(e)}; the page says: ${await w.page.locator("#pairing").innerText()}`)
            })
          )
          yield* step(() => badgeIn(w, `tr[data-channel="${channelId}"]`, "connected").waitFor())
          yield* waitForStatus(user, channelId, "connected")
          yield* Browser.screenshot(w.page, "connected")

          // a message moves to read on the page (polled), and its timeline lists each step
          const contact = wa.contact("+4915112340002")
          const { message } = yield* sendText(user, channelId, contact, "Hello from the console test")
          yield* step(async () => {
            await w.page.getByRole("button", { name: "Messages" }).click()
            await badgeIn(w, `tr[data-message="${message.id}"]`, "read").waitFor({ timeout: 30_000 })
            await w.page.locator(`tr[data-message="${message.id}"]`).getByRole("button", { name: "Timeline" }).click()
            await w.page.locator("#timeline-list .badge[data-status=\"read\"]").waitFor()
          })
          const timeline = yield* step(() => w.page.locator("#timeline-list li").allInnerTexts())
          assert.isAtLeast(timeline.length, 3)
          assert.include(timeline.join("\n"), "queued")
          yield* Browser.screenshot(w.page, "messages")

          // the number's health: the warm-up's day and cap, the one new contact, then WhatsApp's
          // reach-out timelock, which opens the panel by itself and says until when
          const health = w.page.locator(`[data-health="${channelId}"]`)
          yield* step(async () => {
            await w.page.locator("nav").getByRole("button", { name: "Channels" }).click()
            // the list drawn again, with the send counted (the earlier drawing said 0 used)
            await health.locator("dd", { hasText: "1 used, 19 left" }).waitFor({ state: "attached" })
            await health.locator("summary").click()
            await health.locator("dd", { hasText: "Day 1 of 14" }).waitFor()
          })
          const healthy = yield* step(() => health.innerText())
          assert.include(healthy, "Day 1 of 14: today's cap for new contacts is 20, 1 used, 19 left")
          assert.include(healthy, "1 of 200 used in 24 h (1 sent, 0 queued, 199 left)")
          assert.include(healthy, "1 to new contacts, 0 to contacts who wrote first")
          assert.include(healthy, "1 on WhatsApp, 0 not on WhatsApp in 24 h")
          assert.match(healthy, /Timelock\s+None/)
          assert.match(healthy, /Last signal\s+None/)
          const ends = Math.floor(Date.now() / 1000) + 3600
          wa.mexNotification("NotificationUserReachoutTimelockUpdate", {
            xwa2_notify_account_reachout_timelock: {
              is_active: true,
              time_enforcement_ends: String(ends),
              enforcement_type: "DEFAULT"
            }
          })
          yield* eventually(
            client.qrPairing.safety({ path: { channelId } }),
            (safety) => safety.restrictions.timelock_until !== null
          )
          const until = yield* step(() => w.page.evaluate((t) => new Date(t).toLocaleString(), ends * 1000))
          yield* step(async () => {
            await w.page.locator("nav").getByRole("button", { name: "Messages" }).click()
            await w.page.locator("nav").getByRole("button", { name: "Channels" }).click()
            await health.getByText("Number health: sends held back").waitFor()
          })
          assert.isNotNull(yield* step(() => health.getAttribute("open")), "opened by itself")
          assert.include(
            yield* step(() => health.innerText()),
            `WhatsApp paused new chats until ${until} (replies still go)`
          )
          assert.include(yield* step(() => health.innerText()), "WhatsApp paused new chats (reach-out timelock), ")
          yield* Browser.screenshot(w.page, "health")

          // the phone removes the linked device; a reload signs in again through the httpOnly refresh
          // cookie and the channel says what happened and what to do
          wa.phone.unlink()
          yield* waitForStatus(user, channelId, "disconnected")
          yield* step(async () => {
            await w.page.reload()
            await w.page.getByRole("heading", { name: "Channels" }).waitFor()
            await badgeIn(w, `tr[data-channel="${channelId}"]`, "disconnected").waitFor()
          })
          assert.include(
            yield* step(() => w.page.locator(`tr[data-channel="${channelId}"]`).innerText()),
            "The phone removed this linked device. Link it again with a new code."
          )
          // the QR safety cap's use: the one message sent in the last 24 h, against 200
          yield* step(() =>
            w.page.locator(`tr[data-channel="${channelId}"]`).getByText(
              "1 of 200 used in 24 h (1 sent, 0 queued, 199 left)"
            )
              .waitFor({ timeout: 10_000 })
          )

          // archive with confirmation
          yield* step(async () => {
            await w.page.getByRole("button", { name: "Archive Front desk" }).click()
            await w.page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click()
            await w.page.getByRole("button", { name: "Archive Front desk" }).click()
            await w.page.getByRole("dialog").getByRole("button", { name: "Archive" }).click()
            await w.page.getByRole("button", { name: "Archive Front desk" }).waitFor({ state: "detached" })
          })
          const archived = yield* client.channels.get({ path: { channelId } })
          assert.strictEqual(archived.status, "archived")

          // sign out: the session is revoked, a reload stays signed out
          yield* step(async () => {
            await w.page.getByRole("button", { name: "Sign out" }).click()
            await w.page.getByRole("button", { name: "Sign in" }).waitFor()
            await w.page.reload()
            await w.page.getByRole("button", { name: "Sign in" }).waitFor()
          })
          assert.isTrue(yield* step(() => w.page.locator("#app").isHidden()))
          yield* assertClean(w, base)
        }), 300_000)

      it.scoped("shows a failed webhook delivery with its response code and replays it", () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const sink = yield* receiver((_r, i) => ({ status: i === 0 ? 400 : 200 }))
          const user = yield* signUp()
          const client = yield* api(user.accessToken, user.workspaceId)
          // the typed client decodes the declared 201 and 202 only
          const endpoint = yield* client.webhooks.create({ payload: { url: sink.url, event_types: ["*"] } })
          const test = yield* client.webhooks.test({
            path: { endpointId: endpoint.id },
            payload: { event_type: "channel.created" }
          })
          const delivery = client.webhooks.delivery({ path: { deliveryId: test.delivery_id } })
          yield* eventually(delivery, (d) => d.status === "failed")
          const w = yield* Browser.newPage()
          yield* signIn(w, base, user)
          const row = `tr[data-delivery="${test.delivery_id}"]`
          yield* step(async () => {
            await w.page.getByRole("button", { name: "Webhooks" }).click()
            await badgeIn(w, row, "failed").waitFor()
          })
          assert.include(yield* step(() => w.page.locator(row).innerText()), "HTTP 400")
          yield* Browser.screenshot(w.page, "webhooks")
          yield* step(() =>
            w.page.locator(row).getByRole("button", { name: "Replay Test event (channel.created)" }).click()
          )
          const replayed = yield* eventually(delivery, (d) => d.replay_count === 1)
          assert.strictEqual(replayed.replay_count, 1)
          yield* eventually(Effect.sync(() => sink.received.length), (n) => n === 2)
          // the replay shows as its own delivery, succeeded with 200
          yield* step(async () => {
            for (let i = 0; i < 50; i++) {
              await w.page.getByRole("button", { name: "Webhooks" }).click()
              if (await w.page.locator("#deliveries .badge[data-status=\"succeeded\"]").count() > 0) break
              await w.page.waitForTimeout(200)
            }
          })
          assert.include(yield* step(() => w.page.locator("#deliveries").innerText()), "HTTP 200")
          yield* assertClean(w, base)
        }))

      it.scoped("works with the keyboard only, with a visible focus", () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const user = yield* signUp()
          yield* createQrChannel(user, "Keyboard")
          const w = yield* Browser.newPage()
          const focused = () =>
            w.page.evaluate<{ id: string; text: string; outline: string; width: string }>(`(() => {
              const e = document.activeElement
              const style = getComputedStyle(e)
              return { id: e.id, text: e.textContent ?? "", outline: style.outlineStyle, width: style.outlineWidth }
            })()`)
          yield* step(async () => {
            await w.page.goto(`${base}/console`)
            // the e-mail field has the focus on arrival
            await w.page.waitForFunction(() =>
              (globalThis as unknown as { document: any }).document.activeElement?.id === "email"
            )
            await w.page.keyboard.type(user.email)
            await w.page.keyboard.press("Tab")
            await w.page.keyboard.type(PASSWORD)
            await w.page.keyboard.press("Enter")
            await w.page.getByRole("button", { name: "Archive Keyboard" }).waitFor()
          })
          // tab to the channel's Rename button, then to Archive, open the confirmation, cancel with Escape
          let reached = false
          for (let i = 0; i < 30 && !reached; i++) {
            yield* step(() => w.page.keyboard.press("Tab"))
            const f = yield* step(focused)
            if (f.text === "Archive Keyboard") {
              reached = true
              assert.notStrictEqual(f.outline, "none", "the focused button shows a focus ring")
              assert.notStrictEqual(f.width, "0px")
            }
          }
          assert.isTrue(reached, "Archive is reachable with Tab")
          yield* Browser.screenshot(w.page, "keyboard-focus")
          yield* step(async () => {
            await w.page.keyboard.press("Enter")
            await w.page.getByRole("dialog").waitFor()
            await w.page.keyboard.press("Escape")
            await w.page.getByRole("dialog").waitFor({ state: "hidden" })
          })
          const list = yield* (yield* api(user.accessToken, user.workspaceId)).channels.list({ urlParams: {} })
          assert.strictEqual(list.data[0]!.status, "pending")
          yield* assertClean(w, base)
        }))

      it.scoped("fits a phone-sized screen", () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const user = yield* signUp()
          yield* createQrChannel(user, "Pocket")
          const w = yield* Browser.newPage({ width: 390, height: 844 })
          yield* signIn(w, base, user)
          yield* step(() => w.page.getByRole("button", { name: "Link Pocket" }).waitFor())
          const width = yield* step(() => w.page.evaluate<number>("document.documentElement.scrollWidth"))
          assert.isAtMost(width, 390, "no horizontal scrolling on a phone")
          // the status reads as text, not colour alone
          assert.include(yield* step(() => w.page.locator("tr[data-channel]").innerText()), "pending")
          yield* Browser.screenshot(w.page, "phone")
          yield* assertClean(w, base)
        }))
    }
  )
})
