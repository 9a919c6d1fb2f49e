/**
 * The console reads media types with the project's one reader (docs/CONSOLE.md "Console"):
 * `services/api/console/media-types.mjs` is `packages/domain/src/ConsoleMedia.ts` bundled
 * (`npm run build:console`), checked here to be what that module builds to now; in a real
 * Chromium it reads types as the server does (parameters, case, spaces; a .mov or a GIF is a
 * document, the kinds' own types their kind), and a .mov a simulated contact sends from the
 * sandbox form lands in the inbox as a document (it was refused as a video the kind does not take).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { ConsoleMedia } from "@switchboard/domain"
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { buildConsoleMedia, output } from "../scripts/build-console.js"
import * as Browser from "./support/Browser.js"
import { signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const ME = "+4915112345678"
const { patientPage: newPage, signIn, step } = Browser
/** An ISO base media file's first box with QuickTime's brand: what an iPhone's .mov starts with. */
const MOV = Buffer.concat([
  Buffer.from([0, 0, 0, 0x14]),
  Buffer.from("ftypqt  "),
  Buffer.from([0, 0, 0, 0]),
  Buffer.from("qt  "),
  Buffer.alloc(64, 1)
])

/** Types as browsers, phones and people write them, and the kind the server stores each as. */
const CASES: ReadonlyArray<readonly [type: string, kind: string, canonical: string]> = [
  ["audio/ogg; codecs=opus", "audio", "audio/ogg; codecs=opus"],
  ["Audio/OGG ;  Codecs=opus", "audio", "audio/ogg; codecs=opus"],
  [" image/jpeg ", "image", "image/jpeg"],
  ["image/webp", "sticker", "image/webp"],
  ["video/mp4", "video", "video/mp4"],
  ["video/quicktime", "document", "video/quicktime"],
  ["image/gif", "document", "image/gif"],
  ["audio/wav", "document", "audio/wav"],
  ["application/pdf", "document", "application/pdf"],
  ["image/", "document", ""],
  ["", "document", ""]
]

describe("console: media types", () => {
  it("serves the reader built from the domain's module as it is now", async () => {
    assert.strictEqual(readFileSync(output, "utf8"), await buildConsoleMedia(), "run npm run build:console")
  }, 120_000)

  it("reads types as the domain does (the module the bundle is made of)", () => {
    for (const [type, kind, canonical] of CASES) {
      assert.strictEqual(ConsoleMedia.kindOfFile(type), kind, type)
      assert.strictEqual(ConsoleMedia.normalize(type), canonical, type)
    }
  })

  layer(Layer.merge(TestApp.layer(), Browser.layer), { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.scoped("reads types in the browser as the server does", () =>
      Effect.gen(function*() {
        const base = yield* Browser.origin
        const w = yield* newPage()
        yield* step(() => w.page.goto(`${base}/console`))
        const read = yield* step(() =>
          w.page.evaluate<Array<[string, string]>>(`import("${base}/console/media-types.mjs").then((m) =>
            ${JSON.stringify(CASES.map(([type]) => type))}.map((t) => [m.kindOfFile(t), m.normalize(t)]))`)
        )
        assert.deepStrictEqual(read, CASES.map(([, kind, canonical]) => [kind, canonical]))
      }), 300_000)

    it.scoped(
      "a .mov a simulated contact sends lands as a document, at a desktop and a phone-sized screen",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const user = yield* signUp()
          for (
            const [name, screen] of [["desktop", { width: 1280, height: 800 }], ["phone", {
              width: 390,
              height: 844
            }]] as const
          ) {
            const w = yield* newPage(screen)
            yield* signIn(w, base, user)
            yield* step(async () => {
              await w.page.locator("nav").getByRole("button", { name: "API keys & sandbox" }).click()
              if (name === "desktop") {
                await w.page.getByRole("button", { name: "Open a sandbox session" }).click()
              } else {
                // the session the desktop page opened: this page manages it with a key of its own
                await w.page.getByRole("button", { name: /^Manage session .* here$/ }).click()
              }
              await w.page.locator("[data-session]").waitFor()
              if (name === "desktop") {
                await w.page.getByLabel("Recipient to verify").fill(ME)
                await w.page.getByRole("button", { name: "Verify recipient" }).click()
              }
              await w.page.getByText(`Verified recipients: ${ME}`).waitFor()
              await w.page.getByLabel("Their text").fill(`Our shop, filmed (${name})`)
              await w.page.getByLabel("Or a file they send").setInputFiles({
                name: `shop-${name}.mov`,
                mimeType: "video/quicktime",
                buffer: MOV
              })
              await w.page.getByRole("button", { name: "Simulate inbound message" }).click()
              await w.page.locator("[id^=inbound-status-]").getByText("Received: see the Inbox.").waitFor()
              await w.page.locator("nav").getByRole("button", { name: "Inbox" }).click()
              await w.page.locator("li[data-conversation]").first().getByRole("button").click()
              await w.page.locator("#thread-messages li[data-type=document]", { hasText: `shop-${name}.mov` })
                .waitFor()
            })
            const width = yield* step(() => w.page.evaluate<number>("document.documentElement.scrollWidth"))
            assert.isAtMost(width, screen.width)
            yield* step(() =>
              w.page.locator("#thread-messages li[data-type=document]", { hasText: `shop-${name}.mov` })
                .scrollIntoViewIfNeeded()
            )
            yield* Browser.docsScreenshot(w.page, `sandbox-mov-${name}`)
          }
        }),
      300_000
    )
  })
})
