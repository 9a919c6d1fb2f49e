import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { api, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

// rate limits are off outside production; this file turns them on with a small upload limit
process.env["RATE_LIMITS"] = "on"
process.env["RATE_LIMIT_MEDIA_UPLOAD"] = "2/1 minute"

const png = () => {
  const bytes = randomBytes(2_000)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  return bytes
}

/** `POST /v1/media`: the status and the body. */
const upload = (token: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post("/v1/media").pipe(
        HttpClientRequest.setHeader("authorization", `Bearer ${token}`),
        HttpClientRequest.bodyUint8Array(png(), "image/png")
      )
    )
    return {
      status: response.status,
      body: (yield* response.json) as {
        readonly error: { readonly code: string; readonly details: { readonly rule: string } }
      }
    }
  }).pipe(Effect.scoped, Effect.orDie)

describe("the media_upload rate limit", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("counts uploads in their own rule per workspace; a refused upload stores nothing", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        assert.strictEqual((yield* upload(key)).status, 201)
        assert.strictEqual((yield* upload(key)).status, 201)
        const limited = yield* upload(key)
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.body.error.code, "RATE_LIMITED")
        assert.strictEqual(limited.body.error.details.rule, "media_upload")
        // nothing of the refused upload is stored
        const client = yield* api(key)
        const usage = yield* client.plan.usage()
        assert.strictEqual(usage.current.media_bytes.used, 4_000)
        // sends are counted apart
        const sent = yield* client.messages.send({
          payload: { to: "+4915112345678", text: { body: "x" } },
          headers: {}
        })
        assert.strictEqual(sent.status, "queued")
        // another workspace has its own count
        const other = yield* sandboxSetup()
        assert.strictEqual((yield* upload(other.key)).status, 201)
      }))
  })
})
