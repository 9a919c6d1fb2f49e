/**
 * Logins and refreshes are counted apart: failed logins from one network must not lock a signed-in
 * console out of refreshing its session, and refreshes must not use up the login attempts.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, envelopeOf, PASSWORD, refused, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

process.env["RATE_LIMITS"] = "on"
process.env["RATE_LIMIT_LOGIN"] = "3/15 minutes"
process.env["RATE_LIMIT_REFRESH"] = "2/15 minutes"

describe("login and refresh rate limits", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refreshes while logins are exhausted, and limits refreshes by their own counter", () =>
      Effect.gen(function*() {
        const user = yield* signUp() // its login is the first of the window
        const client = yield* api()
        for (let i = 2; i <= 3; i++) {
          const reply = yield* refused(client.auth.login({ payload: { email: user.email, password: "wrong" } }))
          assert.strictEqual(reply.status, 401, `login ${i}`)
        }
        const login = yield* refused(client.auth.login({ payload: { email: user.email, password: PASSWORD } }))
        assert.strictEqual(login.status, 429)
        assert.strictEqual(login.details["rule"], "login")

        // raw refreshes: the contract declares no body for refresh, and the test reads RateLimit-Limit
        const first = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: user.refreshToken } })
        assert.strictEqual(first.status, 200, first.text)
        assert.strictEqual(first.headers["ratelimit-limit"], "2")
        // raw: a refresh with the token in the body
        const second = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: first.body.refresh_token } })
        assert.strictEqual(second.status, 200, second.text)
        // raw: a refresh with the token in the body; the 429's envelope is read from the raw answer
        const third = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: second.body.refresh_token } })
        assert.strictEqual(third.status, 429)
        assert.strictEqual(envelopeOf(third).code, "RATE_LIMITED")
        assert.strictEqual(envelopeOf(third).details["rule"], "refresh")
      }))
  })
})
