import { HttpClient, HttpClientResponse } from "@effect/platform"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as TestApp from "./support/TestApp.js"

describe("health probes", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("answers /health with ok", () =>
      Effect.gen(function*() {
        const response = yield* HttpClient.get("/health")
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(yield* response.json, { status: "ok" })
      }))

    it.effect("reports every dependency on /ready", () =>
      Effect.gen(function*() {
        const response = yield* HttpClient.get("/ready")
        const body = (yield* response.json) as any
        assert.strictEqual(response.status, 200)
        assert.strictEqual(body.status, "ready")
        assert.strictEqual(body.checks.database.status, "up")
        assert.strictEqual(body.checks.cluster.status, "up")
        assert.include(["up", "disabled"], body.checks.redis.status)
      }))
  })
})
