/**
 * A real Chromium for the console's tests (docs/CONSOLE.md "Console"): Debian's `/usr/bin/chromium` (or
 * `CHROMIUM_PATH`) driven by the pinned `playwright-core`, which never downloads a browser. No
 * browser is a failure, never a skip. Pages record every request and every CSP violation.
 */
import { HttpServer } from "@effect/platform"
import { assert } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { PASSWORD } from "./Fixtures.js"

export const ARTIFACTS = join(import.meta.dirname, "..", "..", ".tmp", "console-screenshots")

export class Browser extends Context.Tag("test/Browser")<Browser, BrowserContext>() {}

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage"
]

/** One browser (a persistent context in a fresh profile directory) for a test file. */
export const layer = Layer.scoped(
  Browser,
  Effect.acquireRelease(
    Effect.promise(async () => {
      const profile = mkdtempSync(join(tmpdir(), "switchboard-chromium-"))
      mkdirSync(ARTIFACTS, { recursive: true })
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
        headless: true,
        args: FLAGS,
        viewport: { width: 1280, height: 800 }
      }).catch((cause) => {
        throw new Error(`No browser could be started (install Debian's chromium): ${String(cause)}`)
      })
      return Object.assign(context, { profileDir: profile })
    }),
    (context) =>
      Effect.promise(async () => {
        await context.close()
        rmSync((context as unknown as { profileDir: string }).profileDir, { recursive: true, force: true })
      })
  )
)

/** `http://127.0.0.1:<port>` of the app under test. */
export const origin = Effect.map(HttpServer.HttpServer, (server) => {
  if (server.address._tag !== "TcpAddress") throw new Error("expected a TCP listener")
  return `http://127.0.0.1:${server.address.port}`
})

export interface Watched {
  readonly page: Page
  /** every URL the page requested */
  readonly requests: Array<string>
  /** CSP violations reported by the page and console errors */
  readonly violations: Array<string>
  readonly consoleErrors: Array<string>
  /** the Authorization headers the page sent */
  readonly tokens: Set<string>
}

/** A new tab (cookies cleared: a fresh visitor) that records what it requests and what it breaks. */
export const newPage = (viewport = { width: 1280, height: 800 }) =>
  Effect.flatMap(Browser, (context) =>
    Effect.acquireRelease(
      Effect.promise(async (): Promise<Watched> => {
        await context.clearCookies()
        const page = await context.newPage()
        await page.setViewportSize(viewport)
        const watched: Watched = { page, requests: [], violations: [], consoleErrors: [], tokens: new Set() }
        page.on("request", (r) => {
          watched.requests.push(r.url())
          const auth = r.headers()["authorization"]
          if (auth !== undefined) watched.tokens.add(auth.replace(/^Bearer /, ""))
        })
        page.on("response", (r) => {
          if (r.status() >= 400) watched.consoleErrors.push(`${r.status()} ${r.url()}`)
        })
        page.on("console", (m) => {
          if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) {
            watched.consoleErrors.push(m.text())
          }
          if (m.text().includes("Content Security Policy")) watched.violations.push(m.text())
        })
        page.on("pageerror", (e) => watched.consoleErrors.push(String(e)))
        await page.exposeFunction("__cspViolation", (text: string) => watched.violations.push(text))
        await page.addInitScript({
          content: `document.addEventListener("securitypolicyviolation", (e) =>
            window.__cspViolation(e.violatedDirective + " " + e.blockedURI))`
        })
        return watched
      }),
      ({ page }) => Effect.promise(() => page.close())
    ))

export const screenshot = (page: Page, name: string) =>
  Effect.promise(() => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true }))

/** Where the console's documented screenshots live (docs/CONSOLE.md links them). */
export const DOCS_SCREENSHOTS = join(import.meta.dirname, "..", "..", "docs", "console")

/**
 * A screenshot of what the screen shows (not the whole page) into `.tmp/console-screenshots/`, and
 * into `docs/console/` too when `CONSOLE_DOCS_SCREENSHOTS=1` (`npm run docs:console-screenshots`):
 * the documented pictures are made by the tests that check what they show.
 */
export const docsScreenshot = (page: Page, name: string) =>
  Effect.promise(async () => {
    const path = join(ARTIFACTS, `${name}.png`)
    await page.screenshot({ path })
    if (process.env["CONSOLE_DOCS_SCREENSHOTS"] === "1") {
      mkdirSync(DOCS_SCREENSHOTS, { recursive: true })
      copyFileSync(path, join(DOCS_SCREENSHOTS, `${name}.png`))
    }
  })

/** Runs a Playwright step. */
export const step = <A>(f: () => Promise<A>) => Effect.promise(f)

/** A new tab whose waits allow for a loaded machine (the server's work is asynchronous: polls, dispatch). */
export const patientPage = (viewport?: { width: number; height: number }) =>
  Effect.tap(newPage(viewport), (w) => Effect.sync(() => w.page.setDefaultTimeout(60_000)))

/** Signs the user (made with the fixtures' password) in and waits for the first page. */
export const signIn = (w: Watched, base: string, user: { readonly email: string }) =>
  step(async () => {
    await w.page.goto(`${base}/console`)
    await w.page.getByLabel("E-mail").fill(user.email)
    await w.page.getByLabel("Password").fill(PASSWORD)
    await w.page.getByRole("button", { name: "Sign in" }).click()
    await w.page.getByRole("heading", { name: "Channels" }).waitFor()
  })

/** Presses Tab until the focused element's text or label matches; fails if it never comes. */
export const tabTo = (w: Watched, target: RegExp) =>
  Effect.gen(function*() {
    for (let i = 0; i < 80; i++) {
      yield* step(() => w.page.keyboard.press("Tab"))
      const name = yield* step(() =>
        w.page.evaluate<string>(`(() => {
          const e = document.activeElement
          const label = e.id ? document.querySelector('label[for="' + e.id + '"]')?.textContent : ""
          return (label || e.textContent || "").trim()
        })()`)
      )
      if (target.test(name)) return
    }
    assert.fail(`${target} is not reachable with Tab`)
  })
