/**
 * A sandbox session's verification locks after 5 wrong codes, whatever the rate limiter allows
 * (rate limits are off in tests), concurrent guesses included. The workspace's sessions are
 * listed, so a script (the README quickstart) finds the active one to reuse or end.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createKey, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const PHONE = "+4915112345678"

const newSession = Effect.gen(function*() {
  const user = yield* signUp()
  const key = (yield* createKey(user, { mode: "test" })).secret
  const session = yield* request("POST", "/v1/sandbox/sessions", { token: key })
  assert.strictEqual(session.status, 201)
  const code: string = session.body.verification.code
  const wrong = code === "000000" ? "000001" : "000000"
  const verify = (c: string) =>
    request("POST", `/v1/sandbox/sessions/${session.body.id}/verify`, {
      token: key,
      body: { phone_number: PHONE, code: c }
    })
  return { code, wrong, verify, key, user, id: session.body.id as string }
})

describe("sandbox verification lock", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("locks verification after 5 wrong codes; the right code is then refused too", () =>
      Effect.gen(function*() {
        const { code, verify, wrong } = yield* newSession
        for (let i = 1; i <= 5; i++) {
          const reply = yield* verify(wrong)
          assert.strictEqual(reply.status, 422)
          assert.strictEqual(reply.body.error.details.reason, "invalid_code")
          assert.strictEqual(reply.body.error.details.attempts_remaining, 5 - i)
        }
        const locked = yield* verify(code)
        assert.strictEqual(locked.status, 422)
        assert.strictEqual(locked.body.error.code, "VALIDATION_ERROR")
        assert.strictEqual(locked.body.error.details.reason, "verification_locked")
        assert.match(locked.body.error.message, /locked/)
      }))

    it.effect("verifies with the right code after fewer than 5 wrong ones", () =>
      Effect.gen(function*() {
        const { code, verify, wrong } = yield* newSession
        for (let i = 0; i < 4; i++) assert.strictEqual((yield* verify(wrong)).status, 422)
        const ok = yield* verify(code)
        assert.strictEqual(ok.status, 200)
        assert.deepStrictEqual(ok.body.verified_recipients, [PHONE])
      }))

    it.effect("counts concurrent wrong codes: at most 5 are judged, the rest are locked out", () =>
      Effect.gen(function*() {
        const { code, verify, wrong } = yield* newSession
        const replies = yield* Effect.forEach(Array.from({ length: 20 }), () => verify(wrong), { concurrency: 20 })
        const reasons = replies.map((r) => r.body.error.details.reason)
        assert.strictEqual(reasons.filter((r) => r === "invalid_code").length, 5)
        assert.strictEqual(reasons.filter((r) => r === "verification_locked").length, 15)
        assert.strictEqual((yield* verify(code)).body.error.details.reason, "verification_locked")
      }))

    it.effect("lists the workspace's sessions, filters by status, and never shows a code", () =>
      Effect.gen(function*() {
        const { code, id, key, user, verify } = yield* newSession
        assert.strictEqual((yield* verify(code)).status, 200)
        const active = yield* request("GET", "/v1/sandbox/sessions?status=active", { token: key })
        assert.strictEqual(active.status, 200)
        assert.deepStrictEqual(active.body.data.map((s: { id: string }) => s.id), [id])
        assert.deepStrictEqual(active.body.data[0].verified_recipients, [PHONE])
        assert.deepStrictEqual(active.body.page, { next_cursor: null, has_more: false })
        assert.notInclude(JSON.stringify(active.body), code)

        assert.strictEqual((yield* request("DELETE", `/v1/sandbox/sessions/${id}`, { token: key })).status, 200)
        const none = yield* request("GET", "/v1/sandbox/sessions?status=active", { token: key })
        assert.deepStrictEqual(none.body.data, [])
        const revoked = yield* request("GET", "/v1/sandbox/sessions?status=revoked&limit=1", { token: key })
        assert.deepStrictEqual(revoked.body.data.map((s: { status: string }) => s.status), ["revoked"])

        // a new session is allowed again (the free plan holds one at a time), listed first
        const next = yield* request("POST", "/v1/sandbox/sessions", { token: key })
        assert.strictEqual(next.status, 201)
        const all = yield* request("GET", "/v1/sandbox/sessions", { token: key })
        assert.deepStrictEqual(all.body.data.map((s: { id: string }) => s.id), [next.body.id, id])

        const userToken = yield* request("GET", "/v1/sandbox/sessions", {
          token: user.accessToken,
          workspace: user.workspaceId
        })
        assert.strictEqual(userToken.status, 403)
        assert.strictEqual(userToken.body.error.code, "SANDBOX_TEST_KEY_REQUIRED")
      }))
  })
})
