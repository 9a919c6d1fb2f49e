import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { createClient, SwitchboardError, uploadMedia } from "@switchboard/sdk"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { createReadStream, openAsBlob } from "node:fs"
import { writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Readable } from "node:stream"
import { sandboxSetup } from "../../../test/support/Fixtures.js"
import * as TestApp from "../../../test/support/TestApp.js"

const TO = "+4915112345678"

const baseUrl = Effect.map(HttpServer.HttpServer, (server) => {
  const address = server.address
  if (address._tag !== "TcpAddress") throw new Error("expected a TCP server")
  return `http://127.0.0.1:${address.port}`
})

const pngFile = Effect.promise(async () => {
  const bytes = randomBytes(300 * 1024)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  const path = join(tmpdir(), `sdk-upload-${randomBytes(4).toString("hex")}.png`)
  await writeFile(path, bytes)
  return { path, sha256: createHash("sha256").update(bytes).digest("hex"), size: bytes.byteLength }
})

describe("uploadMedia (sdk)", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("streams a file from disk (a Blob or a stream) and sends it as an image", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const options = { baseUrl: yield* baseUrl, apiKey: key }
        const file = yield* pngFile
        const fromBlob = yield* Effect.promise(async () =>
          uploadMedia(options, { file: await openAsBlob(file.path), contentType: "image/png", filename: "menu.png" })
        )
        assert.strictEqual(fromBlob.status, "ready")
        assert.strictEqual(fromBlob.sha256, file.sha256)
        assert.strictEqual(fromBlob.filename, "menu.png")
        const fromStream = yield* Effect.promise(() =>
          uploadMedia(options, {
            file: Readable.toWeb(createReadStream(file.path)) as ReadableStream<Uint8Array>,
            contentType: "image/png"
          })
        )
        assert.strictEqual(fromStream.size_bytes, file.size)
        assert.strictEqual(fromStream.sha256, file.sha256)
        const switchboard = createClient(options)
        const sent = yield* Effect.promise(() =>
          switchboard.messages.send({
            payload: { to: TO, image: { media_id: fromBlob.id, caption: "Menu" } },
            headers: {}
          })
        )
        assert.strictEqual(sent.type, "image")
      }))

    it.effect("rejects with the API's error: bytes that are not the declared type", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const url = yield* baseUrl
        const refused = yield* Effect.promise(() =>
          uploadMedia({ baseUrl: url, apiKey: key }, { file: new Uint8Array([1, 2, 3, 4]), contentType: "image/png" })
            .then(() => undefined, (e: unknown) => e)
        )
        assert.instanceOf(refused, SwitchboardError)
        const error = refused as SwitchboardError
        assert.strictEqual(error.status, 422)
        assert.strictEqual(error.code, "VALIDATION_ERROR")
        assert.strictEqual(error.details["reason"], "media_type_unsupported")
      }))
  })
})
