/**
 * The console (docs/CONSOLE.md "Console") linking a number with a pairing code instead of a QR
 * code (docs/QR-CHANNELS.md "Linking with a code"): beside the QR code, "Link with a code" takes
 * the number, shows WhatsApp's code large with how long it is valid, and once the code is typed
 * on the (fake) phone says the number is connected. Real Chromium, real Baileys, the fake phone.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Browser from "./support/Browser.js"
import { PASSWORD, signUp } from "./support/Fixtures.js"
import { appWith, createQrChannel, Wa, waitForStatus } from "./support/QrApp.js"

const { step } = Browser
const PHONE = "+15550006262"

describe("console: linking with a code", () => {
  layer(Layer.merge(appWith({ phoneNumber: PHONE }), Browser.layer), {
    excludeTestServices: true,
    timeout: 180_000
  })((it) => {
    it.scoped(
      "shows WhatsApp's code for the number, large with its expiry, and connects once it is typed",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const base = yield* Browser.origin
          const user = yield* signUp()
          const channelId = yield* createQrChannel(user, "Counter")
          const w = yield* Browser.newPage()
          yield* step(async () => {
            await w.page.goto(`${base}/console`)
            await w.page.getByLabel("E-mail").fill(user.email)
            await w.page.getByLabel("Password").fill(PASSWORD)
            await w.page.getByRole("button", { name: "Sign in" }).click()
            await w.page.getByRole("button", { name: "Link Counter" }).click()
            await w.page.locator("#qr svg").waitFor({ timeout: 30_000 })
            await w.page.getByLabel("Phone number to link").fill("+1 555 000 6262")
            await w.page.getByRole("button", { name: "Link with a code" }).click()
            await w.page.locator("#pairing-code").waitFor({ state: "visible", timeout: 30_000 })
          })
          const shown = yield* step(() => w.page.locator("#pairing-code").innerText())
          assert.match(shown, /^[A-Z0-9]{4}-[A-Z0-9]{4}$/)
          assert.strictEqual(yield* step(() => w.page.locator("#qr svg").count()), 0)
          assert.match(yield* step(() => w.page.locator("#countdown").innerText()), /^Code valid for \d+ s$/)
          yield* step(() => w.page.getByText("Link with phone number instead, then type this code.").waitFor())
          yield* Browser.screenshot(w.page, "pairing-code")

          assert.strictEqual(yield* wa.phone.typesCode(shown.replace("-", "")), "linked")
          yield* step(() => w.page.getByText(`Connected as ${PHONE}.`).waitFor({ timeout: 30_000 }))
          assert.isTrue(yield* step(() => w.page.locator("#pairing-code").isHidden()))
          yield* waitForStatus(user, channelId, "connected")

          const starts = w.requests.filter((u) => u.endsWith(`/v1/channels/${channelId}/qr/start`))
          assert.strictEqual(starts.length, 2)
          assert.deepStrictEqual(wa.phone.codeRequests, [PHONE.slice(1)])
          for (const url of w.requests) assert.isTrue(url.startsWith(`${base}/`), url)
          assert.deepStrictEqual(w.violations, [])
        }),
      180_000
    )
  })
})
