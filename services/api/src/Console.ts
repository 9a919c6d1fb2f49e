/**
 * The console (docs/CONSOLE.md "Console"): one static page at `<prefix>/console` with its scripts,
 * style and the pinned QR library, as `npm run build` made them (scripts/build-console.ts: the
 * TypeScript in `services/api/console/src` bundled by esbuild into `dist/console/`). Every file of
 * that folder is read once at start-up and served under its name; nothing else is. A strict
 * Content-Security-Policy (`default-src 'self'`, no inline script or style; images and players also
 * take the `blob:` URLs the page makes of media it read with the user's token) on each answer.
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, extname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { HttpConfig } from "./HttpConfig.js"

// Bundled (`npm run build`, scripts/build.ts), the console sits in `console/` beside the bundle:
// the image carries no sources. From the sources (the in-process tests), it is the build's
// `dist/console` at the repository's root, which the test run's global setup makes.
const bundled = join(dirname(fileURLToPath(import.meta.url)), "console")
const consoleDir = existsSync(join(bundled, "index.html"))
  ? bundled
  : join(
    dirname(createRequire(import.meta.url).resolve("@switchboard/service-api")),
    "..",
    "..",
    "..",
    "dist",
    "console"
  )

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

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json"
}

const escapeAttribute = (value: string) =>
  value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** The console's routes on the API router (so the global prefix applies as to every route). */
export const ConsoleLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const { basePath } = yield* HttpConfig
    if (!existsSync(join(consoleDir, "index.html"))) {
      // a checkout that was never built: say how to build it rather than serve nothing
      yield* router.get(
        "/console",
        Effect.succeed(
          HttpServerResponse.text("The console is not built: run npm run build.", { status: 503, headers })
        )
      )
      return
    }
    const page = readFileSync(join(consoleDir, "index.html"), "utf8").replaceAll("{{BASE}}", escapeAttribute(basePath))
    yield* router.get(
      "/console",
      Effect.succeed(HttpServerResponse.text(page, { contentType: "text/html; charset=utf-8", headers }))
    )
    for (const name of readdirSync(consoleDir)) {
      const contentType = CONTENT_TYPES[extname(name)]
      if (contentType === undefined) continue
      const body = readFileSync(join(consoleDir, name))
      yield* router.get(
        `/console/${name}`,
        Effect.succeed(HttpServerResponse.uint8Array(body, { contentType, headers }))
      )
    }
  })
)
