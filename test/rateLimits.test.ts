import { assert, describe, layer } from "@effect/vitest"
import { HealthApi } from "@switchboard/api"
import { Effect } from "effect"
import { api, createKey, envelopeOf, PASSWORD, refused, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

// The rate limits are on in production and off elsewhere; these tests switch them on.
process.env["RATE_LIMITS"] = "on"

describe("HTTP rate limits", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refuses the 21st login in 15 minutes from one IP with Retry-After", () =>
      Effect.gen(function*() {
        const user = yield* signUp() // its login is the first of the window
        // raw (every login here): the test reads the RateLimit-* and Retry-After headers
        let last = yield* request("POST", "/v1/auth/login", { body: { email: user.email, password: PASSWORD } })
        assert.strictEqual(last.headers["ratelimit-limit"], "20")
        assert.strictEqual(last.headers["ratelimit-remaining"], "18")
        for (let i = 3; i <= 20; i++) {
          // raw: the RateLimit-Remaining header is read
          last = yield* request("POST", "/v1/auth/login", { body: { email: user.email, password: "not the password" } })
          assert.strictEqual(last.status, 401, `attempt ${i}`)
        }
        assert.strictEqual(last.headers["ratelimit-remaining"], "0")
        // raw: the Retry-After and RateLimit-Remaining headers are read
        const limited = yield* request("POST", "/v1/auth/login", { body: { email: user.email, password: PASSWORD } })
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(envelopeOf(limited).code, "RATE_LIMITED")
        const retryAfter = Number(limited.headers["retry-after"])
        assert.isAbove(retryAfter, 0)
        assert.isAtMost(retryAfter, 15 * 60)
        assert.strictEqual(limited.headers["ratelimit-remaining"], "0")
      }))
  })
})

describe("HTTP rate limits on other routes", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("sends no rate limit headers on routes without a limit", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user)
        // raw: the test reads the answer's headers
        const listed = yield* request("GET", "/v1/api-keys", { token: key.secret })
        assert.strictEqual(listed.status, 200)
        assert.isUndefined(listed.headers["ratelimit-limit"])
      }))
  })
})

describe("HTTP rate limits when Redis is unreachable", () => {
  layer(TestApp.layer({}, { redisUrl: "redis://127.0.0.1:1" }), { excludeTestServices: true, timeout: 120_000 })(
    (it) => {
      it.effect("fails open and reports Redis down on /ready", () =>
        Effect.gen(function*() {
          const client = yield* api()
          // the 503 answer decodes as NotReady, the endpoint's declared error
          const failure = yield* Effect.flip(client.health.ready())
          if (!(failure instanceof HealthApi.NotReady)) {
            return assert.fail(`/ready did not answer NotReady: ${String(failure)}`)
          }
          const readiness = failure
          assert.strictEqual(readiness.status, "not_ready")
          assert.strictEqual(readiness.checks.redis.status, "down")
          assert.strictEqual(readiness.checks.database.status, "up")
          const login = yield* refused(
            client.auth.login({ payload: { email: "nobody@example.com", password: PASSWORD } })
          )
          assert.strictEqual(login.status, 401)
        }))
    }
  )
})
