/**
 * The console's files as a browser fetches them (services/api/src/Console.ts): compressed with
 * brotli or gzip when `Accept-Encoding` takes it (the bundle was ~770 KB sent as it is), with an
 * `ETag` that a revalidation (`If-None-Match`) answers with 304 and no body, and `Vary:
 * Accept-Encoding` so a cache keeps the forms apart. Raw `http.get`: `fetch` would decompress.
 */
import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { readdirSync, statSync } from "node:fs"
import { get, type IncomingHttpHeaders } from "node:http"
import { join } from "node:path"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import * as TestApp from "./support/TestApp.js"

/** The console's largest script (the shared chunk, ~600 KB), as the server serves it from the build. */
const consoleDir = join(import.meta.dirname, "..", "dist", "console")
const BUNDLE = `/console/${
  readdirSync(consoleDir).filter((n) => n.endsWith(".mjs")).sort((a, b) =>
    statSync(join(consoleDir, b)).size - statSync(join(consoleDir, a)).size
  )[0]
}`

interface Raw {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

const fetchRaw = (path: string, headers: Record<string, string>) =>
  Effect.flatMap(
    Effect.map(HttpServer.HttpServer, (server) => (server.address as HttpServer.TcpAddress).port),
    (port) =>
      Effect.async<Raw>((resume) => {
        get({ host: "127.0.0.1", port, path, headers }, (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (c: Buffer) => chunks.push(c))
          response.on("end", () =>
            resume(
              Effect.succeed({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) })
            ))
        }).on("error", (e) => resume(Effect.die(e)))
      })
  )

describe("console files over the wire", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("sends the bundle compressed when accepted, as it is otherwise, the same bytes either way", () =>
      Effect.gen(function*() {
        const plain = yield* fetchRaw(BUNDLE, {})
        assert.strictEqual(plain.status, 200)
        assert.isUndefined(plain.headers["content-encoding"])
        assert.isAbove(plain.body.byteLength, 300_000, "the bundle")
        assert.strictEqual(plain.headers["vary"], "Accept-Encoding")
        assert.include(plain.headers["content-type"], "javascript")

        const br = yield* fetchRaw(BUNDLE, { "accept-encoding": "gzip, deflate, br" })
        assert.strictEqual(br.headers["content-encoding"], "br")
        assert.isBelow(br.body.byteLength, plain.body.byteLength / 3)
        assert.isTrue(brotliDecompressSync(br.body).equals(plain.body))
        // the policy headers stay on every form
        assert.include(br.headers["content-security-policy"], "default-src 'self'")
        assert.strictEqual(br.headers["x-content-type-options"], "nosniff")

        const gz = yield* fetchRaw(BUNDLE, { "accept-encoding": "gzip" })
        assert.strictEqual(gz.headers["content-encoding"], "gzip")
        assert.isTrue(gunzipSync(gz.body).equals(plain.body))

        // a client that refuses both gets the file as it is; q=0 refuses an encoding
        const refused = yield* fetchRaw(BUNDLE, { "accept-encoding": "br;q=0, gzip;q=0" })
        assert.isUndefined(refused.headers["content-encoding"])
        assert.isTrue(refused.body.equals(plain.body))

        // the page too
        const page = yield* fetchRaw("/console", { "accept-encoding": "br" })
        assert.strictEqual(page.status, 200)
        assert.strictEqual(page.headers["content-encoding"], "br")
        assert.include(brotliDecompressSync(page.body).toString("utf8"), "<html")
      }))

    it.effect("answers a revalidation with 304 and no body while the file is the same, with a tag per form", () =>
      Effect.gen(function*() {
        const plain = yield* fetchRaw(BUNDLE, {})
        const br = yield* fetchRaw(BUNDLE, { "accept-encoding": "br" })
        const tag = plain.headers["etag"]
        assert.match(tag!, /^"[A-Za-z0-9_-]+"$/)
        assert.notStrictEqual(br.headers["etag"], tag, "each encoding is its own representation")

        for (const [held, encoding] of [[tag!, ""], [br.headers["etag"]!, "br"], [`W/${tag}`, "gzip"]] as const) {
          const again = yield* fetchRaw(BUNDLE, {
            "if-none-match": `"other", ${held}`,
            ...(encoding === "" ? {} : { "accept-encoding": encoding })
          })
          assert.strictEqual(again.status, 304, held)
          assert.strictEqual(again.body.byteLength, 0)
          assert.strictEqual(again.headers["vary"], "Accept-Encoding")
          assert.isDefined(again.headers["etag"])
        }
        const stale = yield* fetchRaw(BUNDLE, { "if-none-match": "\"an-older-build\"" })
        assert.strictEqual(stale.status, 200)
        assert.isTrue(stale.body.equals(plain.body))
        // the page has its own tag
        const page = yield* fetchRaw("/console", {})
        assert.notStrictEqual(page.headers["etag"], tag)
        assert.strictEqual(
          (yield* fetchRaw("/console", { "if-none-match": page.headers["etag"]! })).status,
          304
        )
      }))
  })
})
