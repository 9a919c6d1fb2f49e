import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, refused, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

// the limits are off outside production; this file switches them on, with a small test-send rule
process.env["RATE_LIMITS"] = "on"
process.env["RATE_LIMIT_TEMPLATE_TEST_SEND"] = "2/1 minute"

const TO = "+4915112345678"

describe("template test-send rate limit", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("counts test-sends against template_test_send, apart from the send rule", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const client = yield* api(key)
        const t = yield* client.templates.create({
          payload: { slug: "hello", name: "Hello", category: "utility", body: "Hello {{name}}" }
        })
        const call = client.templates.testSend({
          path: { templateId: t.id },
          payload: { to: TO, variables: { name: "A" } },
          headers: {},
          withResponse: true
        })
        const [, first] = yield* call
        assert.strictEqual(first.headers["ratelimit-limit"], "2")
        yield* call
        const limited = yield* refused(call)
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.code, "RATE_LIMITED")
        assert.strictEqual(limited.details["rule"], "template_test_send")
        // a plain send still goes through
        const sent = yield* client.messages.send({ payload: { to: TO, text: { body: "x" } }, headers: {} })
        assert.strictEqual(sent.status, "queued")
      }))
  })
})
