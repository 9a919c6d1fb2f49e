/**
 * The console (docs/CONSOLE.md "Console"): one static page at `<prefix>/console` with its script, style
 * and the pinned QR library (`qrcode-generator`, one file through a fixed route, never
 * node_modules as a whole). No build step; every file is read once at start-up. A strict
 * Content-Security-Policy (`default-src 'self'`, no inline script or style; images and players also
 * take the `blob:` URLs the page makes of media it read with the user's token) on each answer.
 * One file is generated, and committed: `media-types.mjs`, the project's media-type reader bundled
 * for the browser (`npm run build:console`).
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { HttpConfig } from "./HttpConfig.js"

// Bundled (`npm run build`, scripts/build.ts), the files sit in `console/` beside the bundle, the QR
// library with them: the image carries no sources. From the sources, they are found through this
// package's entry and the library through node_modules.
const bundled = join(dirname(fileURLToPath(import.meta.url)), "console")
const fromSources = () => {
  const require = createRequire(import.meta.url)
  return {
    consoleDir: join(dirname(require.resolve("@switchboard/service-api")), "..", "console"),
    qrLibrary: join(dirname(require.resolve("qrcode-generator")), "qrcode.mjs")
  }
}
const { consoleDir, qrLibrary } = existsSync(join(bundled, "index.html"))
  ? { consoleDir: bundled, qrLibrary: join(bundled, "qrcode.mjs") }
  : fromSources()

export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; " +
  "connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const headers = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache"
}

/** The page's own modules (a fixed list: nothing else under the folder is served). */
const CONSOLE_SCRIPTS = [
  "app.js",
  "lib.mjs",
  "developers.mjs",
  "inbox.mjs",
  "directory.mjs",
  "media.mjs",
  "health.mjs",
  "words.mjs",
  "media-types.mjs"
] as const

const escapeAttribute = (value: string) =>
  value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

const file = (path: string, contentType: string) => {
  const body = readFileSync(path)
  return Effect.succeed(HttpServerResponse.uint8Array(body, { contentType, headers }))
}

/** The console's routes on the API router (so the global prefix applies as to every route). */
export const ConsoleLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const { basePath } = yield* HttpConfig
    const page = readFileSync(join(consoleDir, "index.html"), "utf8").replaceAll(
      "{{BASE}}",
      escapeAttribute(basePath)
    )
    const index = Effect.succeed(HttpServerResponse.text(page, { contentType: "text/html; charset=utf-8", headers }))
    yield* router.get("/console", index)
    for (const script of CONSOLE_SCRIPTS) {
      yield* router.get(`/console/${script}`, file(join(consoleDir, script), "text/javascript; charset=utf-8"))
    }
    yield* router.get("/console/console.css", file(join(consoleDir, "console.css"), "text/css; charset=utf-8"))
    yield* router.get("/console/qrcode.mjs", file(qrLibrary, "text/javascript; charset=utf-8"))
  })
)
