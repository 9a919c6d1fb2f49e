/**
 * The console (docs/CONSOLE.md "Console") when nobody scans: the page counts down, says the code expired,
 * and "New code" starts pairing again with a fresh code; a page whose live stream was away (the
 * server answering 503) when the code expired says so when it comes back. Its own app (short-lived
 * codes) and browser.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Schedule } from "effect"
import * as Browser from "./support/Browser.js"
import { api, PASSWORD, signUp } from "./support/Fixtures.js"
import { appWith, createQrChannel } from "./support/QrApp.js"

const { step } = Browser

describe("console: a QR code nobody scans", () => {
  layer(Layer.merge(appWith({ refs: 1 }, { qrTimeout: Option.some(Duration.seconds(6)) }), Browser.layer), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.scoped("shows the expiry and a new code on request", () =>
      Effect.gen(function*() {
        const base = yield* Browser.origin
        const user = yield* signUp()
        const channelId = yield* createQrChannel(user, "Lobby")
        const w = yield* Browser.newPage()
        yield* step(async () => {
          await w.page.goto(`${base}/console`)
          await w.page.getByLabel("E-mail").fill(user.email)
          await w.page.getByLabel("Password").fill(PASSWORD)
          await w.page.getByRole("button", { name: "Sign in" }).click()
          await w.page.getByRole("button", { name: "Link Lobby" }).click()
          // the code lives 6 s (long enough to render the next one at load, short enough to wait out):
          // on a loaded machine the page may first hear of it expired
          await w.page.locator("#qr svg").or(w.page.getByText("The code expired before it was scanned.")).first()
            .waitFor()
        })
        const first = yield* step(async () =>
          (await w.page.locator("#qr svg").count()) > 0 ? w.page.locator("#qr path").getAttribute("d") : null
        )
        yield* step(async () => {
          await w.page.getByText("The code expired before it was scanned. Ask for a new one.").waitFor({
            timeout: 30_000
          })
          await w.page.getByRole("button", { name: "New code" }).waitFor()
        })
        assert.strictEqual(yield* step(() => w.page.locator("#qr svg").count()), 0)
        // the button has the focus: Enter asks for a new code
        yield* Browser.screenshot(w.page, "qr-expired")
        yield* step(async () => {
          await w.page.keyboard.press("Enter")
          await w.page.locator("#qr svg").waitFor({ timeout: 30_000 })
        })
        const second = yield* step(() => w.page.locator("#qr path").getAttribute("d"))
        assert.isString(second)
        assert.notStrictEqual(second, first)
        const starts = w.requests.filter((u) => u.endsWith(`/v1/channels/${channelId}/qr/start`))
        assert.strictEqual(starts.length, 2)
        const status = yield* (yield* api(user.accessToken, user.workspaceId)).qrPairing.status({ path: { channelId } })
        assert.include(["connecting", "awaiting_scan", "disconnected"], status.status)
        for (const url of w.requests) assert.isTrue(url.startsWith(`${base}/`), url)
        assert.deepStrictEqual(w.violations, [])
      }))

    it.scoped("a stream that was away when the code expired says it expired and offers a new code", () =>
      Effect.gen(function*() {
        const base = yield* Browser.origin
        const user = yield* signUp()
        const channelId = yield* createQrChannel(user, "Front desk")
        const client = yield* api(user.accessToken, user.workspaceId)
        const w = yield* Browser.newPage()
        // the server cannot answer the stream (a runner moving) until the code has expired
        let away = true
        let refused = 0
        yield* step(() =>
          w.page.route(`**/v1/channels/${channelId}/qr/stream`, async (route) => {
            if (!away) return route.continue()
            refused++
            await route.fulfill({
              status: 503,
              headers: { "retry-after": "1", "content-type": "application/json" },
              body: JSON.stringify({ error: { code: "SERVICE_UNAVAILABLE", message: "try again", details: {} } })
            })
          })
        )
        yield* step(async () => {
          await w.page.goto(`${base}/console`)
          await w.page.getByLabel("E-mail").fill(user.email)
          await w.page.getByLabel("Password").fill(PASSWORD)
          await w.page.getByRole("button", { name: "Sign in" }).click()
          await w.page.getByRole("button", { name: "Link Front desk" }).click()
        })
        // the code was issued and expired while the page could not listen
        yield* client.qrPairing.status({ path: { channelId } }).pipe(
          Effect.repeat({
            until: (s) => s.status === "disconnected",
            schedule: Schedule.spaced("200 millis").pipe(Schedule.upTo("60 seconds"))
          })
        )
        away = false
        yield* step(async () => {
          await w.page.getByText("The code expired before it was scanned. Ask for a new one.").waitFor({
            timeout: 30_000
          })
          await w.page.getByRole("button", { name: "New code" }).waitFor()
        })
        assert.isAbove(refused, 0)
        assert.strictEqual(yield* step(() => w.page.locator("#qr svg").count()), 0)
        yield* step(async () => {
          await w.page.getByRole("button", { name: "New code" }).click()
          await w.page.locator("#qr svg").waitFor({ timeout: 30_000 })
        })
        assert.deepStrictEqual(w.violations, [])
      }))
  })
})
