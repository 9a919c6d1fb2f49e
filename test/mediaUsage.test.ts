/**
 * `GET /v1/usage` shows the workspace's stored media bytes as a live gauge (docs/API.md "Media"):
 * each upload adds its size at once; another workspace's files and refused uploads add nothing.
 * (Retention purges and crashed uploads: packages/entities/test/MediaSweeps.test.ts.)
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { api, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const png = (size: number) => {
  const bytes = randomBytes(size)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  return bytes
}

const upload = (token: string, bytes: Uint8Array, contentType: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post("/v1/media").pipe(
        HttpClientRequest.setHeader("authorization", `Bearer ${token}`),
        HttpClientRequest.bodyUint8Array(bytes, contentType)
      )
    )
    return response.status
  }).pipe(Effect.scoped, Effect.orDie)

const mediaBytes = (token: string) =>
  Effect.map(Effect.flatMap(api(token), (client) => client.plan.usage()), (usage) => usage.current.media_bytes)

describe("stored media in usage", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("grows with each stored upload, and only the workspace's own", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const other = yield* sandboxSetup()
        assert.deepStrictEqual(yield* mediaBytes(key), { used: 0, limit: null, unlimited: true, remaining: null })

        assert.strictEqual(yield* upload(key, png(300_000), "image/png"), 201)
        assert.strictEqual((yield* mediaBytes(key)).used, 300_000)
        assert.strictEqual(
          yield* upload(key, Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(1_000)]), "application/pdf"),
          201
        )
        assert.strictEqual((yield* mediaBytes(key)).used, 301_009)

        // refused (bytes that are not the declared type): nothing stored, nothing counted
        assert.strictEqual(yield* upload(key, randomBytes(5_000), "image/png"), 422)
        assert.strictEqual((yield* mediaBytes(key)).used, 301_009)
        // another workspace's upload counts there only
        assert.strictEqual(yield* upload(other.key, png(4_000), "image/png"), 201)
        assert.strictEqual((yield* mediaBytes(key)).used, 301_009)
        assert.strictEqual((yield* mediaBytes(other.key)).used, 4_000)
      }))
  })
})
