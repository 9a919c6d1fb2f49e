/**
 * A rate-limit rule whose window is not a whole number of milliseconds per request
 * (`RATE_LIMIT_LOGIN=7/15 minutes`) is enforced like any other: the Redis store refused it on
 * every request and the limit failed open (found by test/chaosRedis.e2e.test.ts, whose
 * `100000/1 minute` send rule logged a warning per request with Redis up).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { envelopeOf, PASSWORD, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

process.env["RATE_LIMITS"] = "on"
process.env["RATE_LIMIT_LOGIN"] = "7/15 minutes"

describe("a rate limit whose window is not a whole number of ms per request", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refuses the 8th login of 7 allowed in 15 minutes", () =>
      Effect.gen(function*() {
        const user = yield* signUp() // its login is the first of the window
        for (let i = 2; i <= 7; i++) {
          // raw: the test reads RateLimit-Limit and Retry-After headers
          const reply = yield* request("POST", "/v1/auth/login", { body: { email: user.email, password: "wrong" } })
          assert.strictEqual(reply.status, 401, `login ${i}`)
          assert.strictEqual(reply.headers["ratelimit-limit"], "7")
        }
        // raw: the test reads the Retry-After header
        const refused = yield* request("POST", "/v1/auth/login", { body: { email: user.email, password: PASSWORD } })
        assert.strictEqual(refused.status, 429, refused.text)
        assert.strictEqual(envelopeOf(refused).code, "RATE_LIMITED")
        assert.isAtMost(Number(refused.headers["retry-after"]), 15 * 60 + 1)
      }))
  })
})
