/**
 * The console (docs/CONSOLE.md "Console") when nobody scans: the page counts down, says the code expired,
 * and "New code" starts pairing again with a fresh code. Its own app (short-lived codes) and browser.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Option } from "effect"
import * as Browser from "./support/Browser.js"
import { api, PASSWORD, signUp } from "./support/Fixtures.js"
import { appWith, createQrChannel } from "./support/QrApp.js"

const { step } = Browser

describe("console: a QR code nobody scans", () => {
  layer(Layer.merge(appWith({ refs: 1 }, { qrTimeout: Option.some(Duration.seconds(3)) }), Browser.layer), {
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
          await w.page.locator("#qr svg").waitFor()
        })
        const first = yield* step(() => w.page.locator("#qr path").getAttribute("d"))
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
  })
})
