/**
 * The console (docs/CONSOLE.md "Console"): one static page at `<prefix>/console` with its scripts,
 * style and the pinned QR library, as `npm run build` made them (scripts/build-console.ts: the
 * TypeScript in `services/api/console/src` bundled by esbuild into `dist/console/`). Every file of
 * that folder is read once at start-up and served under its name; nothing else is. A strict
 * Content-Security-Policy (`default-src 'self'`, no inline script or style; images and players also
 * take the `blob:` URLs the page makes of media it read with the user's token) on each answer.
 * Each answer carries an `ETag` (a request whose `If-None-Match` names it is 304 without a body)
 * and, when the client accepts it (`Accept-Encoding`, negotiated by `negotiator`), is compressed
 * with brotli or gzip: the bundle is compressed once, on the first request that asks for it.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import Negotiator from "negotiator"
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, extname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { brotliCompress, constants as zlib, gzip } from "node:zlib"
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

/** The encodings offered, best first; `identity` is the file as it is. */
const ENCODINGS = ["br", "gzip", "identity"] as const
type Encoding = typeof ENCODINGS[number]

/** Files smaller than this are sent as they are: compression would save next to nothing. */
const COMPRESS_FROM_BYTES = 1024

/**
 * negotiator 1.0's `encoding` with its `preferred` option (the server's order for encodings the
 * client accepts equally), which @types/negotiator 0.6 does not declare.
 */
type EncodingChoice = (
  available: ReadonlyArray<string>,
  options: { readonly preferred: ReadonlyArray<string> }
) => string | undefined

const brotli = promisify(brotliCompress)
const gzipped = promisify(gzip)

/** A file served under its name: its bytes, its type, its entity tag and its compressed forms once made. */
interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
  /** a strong tag of the bytes as they are (`"<sha-256, base64url>"`); a compressed form's adds `-br` or `-gzip` */
  readonly etag: string
  readonly encoded: Map<Exclude<Encoding, "identity">, Promise<Uint8Array>>
}

const asset = (body: Uint8Array, contentType: string): Asset => ({
  body,
  contentType,
  etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 32)}"`,
  encoded: new Map()
})

const tagOf = (file: Asset, encoding: Encoding) =>
  encoding === "identity" ? file.etag : `${file.etag.slice(0, -1)}-${encoding}"`

/** The file compressed with `encoding`, made once (off the event loop, zlib's thread pool) and kept. */
const compressed = (file: Asset, encoding: Exclude<Encoding, "identity">) => {
  let made = file.encoded.get(encoding)
  if (made === undefined) {
    made = encoding === "br"
      ? brotli(file.body, {
        params: {
          [zlib.BROTLI_PARAM_MODE]: zlib.BROTLI_MODE_TEXT,
          [zlib.BROTLI_PARAM_QUALITY]: 9,
          [zlib.BROTLI_PARAM_SIZE_HINT]: file.body.byteLength
        }
      })
      : gzipped(file.body, { level: 9 })
    file.encoded.set(encoding, made)
  }
  return made
}

/** Whether `If-None-Match` names a tag of the file (any of its encodings: the same bytes), or is `*`. */
export const notModified = (ifNoneMatch: string | undefined, etags: ReadonlyArray<string>) => {
  if (ifNoneMatch === undefined) return false
  if (ifNoneMatch.trim() === "*") return true
  return ifNoneMatch.split(",").some((tag) => etags.includes(tag.trim().replace(/^W\//, "")))
}

/** The answer to a `GET` of `file`: 304 when the client holds it, else the bytes in the best encoding it accepts. */
const serve = (file: Asset) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const offered = file.body.byteLength < COMPRESS_FROM_BYTES ? (["identity"] as const) : ENCODINGS
    const negotiator = new Negotiator({
      headers: { "accept-encoding": request.headers["accept-encoding"] ?? "identity" }
    })
    // among encodings the client likes as much, ours first (brotli): `gzip, deflate, br` is brotli
    const chosen = (negotiator.encoding.bind(negotiator) as EncodingChoice)(offered, { preferred: offered })
    // `identity;q=0` with nothing else acceptable: the file as it is all the same (RFC 9110 12.5.3 allows it)
    const encoding: Encoding = offered.find((e) => e === chosen) ?? "identity"
    const etag = tagOf(file, encoding)
    const common = { ...headers, etag, vary: "Accept-Encoding" }
    if (notModified(request.headers["if-none-match"], ENCODINGS.map((e) => tagOf(file, e)))) {
      return HttpServerResponse.empty({ status: 304, headers: common })
    }
    if (encoding === "identity") {
      return HttpServerResponse.uint8Array(file.body, { contentType: file.contentType, headers: common })
    }
    const body = yield* Effect.promise(() => compressed(file, encoding))
    return HttpServerResponse.uint8Array(body, {
      contentType: file.contentType,
      headers: { ...common, "content-encoding": encoding }
    })
  })

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
    yield* router.get("/console", serve(asset(new TextEncoder().encode(page), "text/html; charset=utf-8")))
    for (const name of readdirSync(consoleDir)) {
      const contentType = CONTENT_TYPES[extname(name)]
      if (contentType === undefined) continue
      yield* router.get(`/console/${name}`, serve(asset(readFileSync(join(consoleDir, name)), contentType)))
    }
  })
)
