/**
 * A sandbox session's verification locks after 5 wrong codes, whatever the rate limiter allows
 * (rate limits are off in tests), concurrent guesses included. The workspace's sessions are
 * listed, so a script (the README quickstart) finds the active one to reuse or end.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, createKey, refused, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const PHONE = "+4915112345678"

const newSession = Effect.gen(function*() {
  const user = yield* signUp()
  const key = (yield* createKey(user, { mode: "test" })).secret
  const client = yield* api(key)
  // the typed client decodes the declared 201 only
  const session = yield* client.sandbox.create()
  const code = session.verification.code
  const wrong = code === "000000" ? "000001" : "000000"
  const verify = (c: string) =>
    client.sandbox.verify({ path: { sessionId: session.id }, payload: { phone_number: PHONE, code: c } })
  return { client, code, wrong, verify, key, user, id: session.id }
})

describe("sandbox verification lock", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("locks verification after 5 wrong codes; the right code is then refused too", () =>
      Effect.gen(function*() {
        const { code, verify, wrong } = yield* newSession
        for (let i = 1; i <= 5; i++) {
          const reply = yield* refused(verify(wrong))
          assert.strictEqual(reply.status, 422)
          assert.strictEqual(reply.details.reason, "invalid_code")
          assert.strictEqual(reply.details.attempts_remaining, 5 - i)
        }
        const locked = yield* refused(verify(code))
        assert.strictEqual(locked.status, 422)
        assert.strictEqual(locked.code, "VALIDATION_ERROR")
        assert.strictEqual(locked.details.reason, "verification_locked")
        assert.match(locked.message, /locked/)
      }))

    it.effect("verifies with the right code after fewer than 5 wrong ones", () =>
      Effect.gen(function*() {
        const { code, verify, wrong } = yield* newSession
        for (let i = 0; i < 4; i++) assert.strictEqual((yield* refused(verify(wrong))).status, 422)
        // the typed client decodes the declared 200 only
        const ok = yield* verify(code)
        assert.deepStrictEqual(ok.verified_recipients, [PHONE])
      }))

    it.effect("counts concurrent wrong codes: at most 5 are judged, the rest are locked out", () =>
      Effect.gen(function*() {
        const { code, verify, wrong } = yield* newSession
        const replies = yield* Effect.forEach(Array.from({ length: 20 }), () => refused(verify(wrong)), {
          concurrency: 20
        })
        const reasons = replies.map((r) => r.details.reason)
        assert.strictEqual(reasons.filter((r) => r === "invalid_code").length, 5)
        assert.strictEqual(reasons.filter((r) => r === "verification_locked").length, 15)
        assert.strictEqual((yield* refused(verify(code))).details.reason, "verification_locked")
      }))

    it.effect("lists the workspace's sessions, filters by status, and never shows a code", () =>
      Effect.gen(function*() {
        const { client, code, id, key, user, verify } = yield* newSession
        yield* verify(code)
        const active = yield* client.sandbox.list({ urlParams: { status: "active" } })
        assert.deepStrictEqual(active.data.map((s) => s.id), [id])
        assert.deepStrictEqual(active.data[0]!.verified_recipients, [PHONE])
        assert.deepStrictEqual(active.page, { next_cursor: null, has_more: false })
        // raw: the code is searched in the whole body, which a decoded list would drop unseen
        const listed = yield* request("GET", "/v1/sandbox/sessions?status=active", { token: key })
        assert.strictEqual(listed.status, 200)
        assert.strictEqual(listed.body.data[0].id, id)
        assert.notInclude(listed.text, code)

        const revoked = yield* client.sandbox.revoke({ path: { sessionId: id } })
        assert.strictEqual(revoked.id, id)
        const none = yield* client.sandbox.list({ urlParams: { status: "active" } })
        assert.deepStrictEqual(none.data, [])
        const onlyRevoked = yield* client.sandbox.list({ urlParams: { status: "revoked", limit: 1 } })
        assert.deepStrictEqual(onlyRevoked.data.map((s) => s.status), ["revoked"])

        // a new session is allowed again (the free plan holds one at a time), listed first
        const next = yield* client.sandbox.create()
        const all = yield* client.sandbox.list({ urlParams: {} })
        assert.deepStrictEqual(all.data.map((s) => s.id), [next.id, id])

        const userToken = yield* refused(
          (yield* api(user.accessToken, user.workspaceId)).sandbox.list({ urlParams: {} })
        )
        assert.strictEqual(userToken.status, 403)
        assert.strictEqual(userToken.code, "SANDBOX_TEST_KEY_REQUIRED")
      }))
  })
})
