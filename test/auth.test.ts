import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Mailer } from "@switchboard/service-api"
import { Effect, Ref } from "effect"
import { createKey, mailedToken, PASSWORD, request, signUp, uniqueEmail } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

describe("users and sessions", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refuses login before the e-mail is verified, then accepts it", () =>
      Effect.gen(function*() {
        const email = uniqueEmail()
        const registered = yield* request("POST", "/v1/auth/register", {
          body: { email, password: PASSWORD, name: "Ann", workspace_name: "Ann's" }
        })
        assert.strictEqual(registered.status, 201)
        assert.match(registered.body.user.id, /^usr_[0-9A-Z]{26}$/)
        assert.strictEqual(registered.body.workspace.plan, "free")
        assert.isNull(registered.body.user.email_verified_at)
        const early = yield* request("POST", "/v1/auth/login", { body: { email, password: PASSWORD } })
        assert.strictEqual(early.status, 403)
        assert.strictEqual(early.body.error.code, "EMAIL_NOT_VERIFIED")
        const token = yield* mailedToken(email)
        const verified = yield* request("POST", "/v1/auth/verify-email", { body: { token } })
        assert.strictEqual(verified.status, 200)
        assert.isString(verified.body.user.email_verified_at)
        const again = yield* request("POST", "/v1/auth/verify-email", { body: { token } })
        assert.strictEqual(again.status, 422)
        assert.strictEqual(again.body.error.details.reason, "invalid_token")
        const login = yield* request("POST", "/v1/auth/login", { body: { email, password: PASSWORD } })
        assert.strictEqual(login.status, 200)
        assert.strictEqual(login.body.token_type, "Bearer")
        assert.strictEqual(login.body.expires_in, 900)
        assert.strictEqual(login.body.workspaces[0].role, "owner")
        const cookie = login.headers["set-cookie"]!
        assert.include(cookie, `refresh_token=${login.body.refresh_token}`)
        assert.include(cookie, "HttpOnly")
        assert.include(cookie, "Secure")
        assert.include(cookie, "SameSite=Strict")
        assert.include(cookie, "Path=/v1/auth")
      }))

    it.effect("mails a link to the address the server listens on, not a fixed port", () =>
      Effect.gen(function*() {
        const email = uniqueEmail()
        yield* request("POST", "/v1/auth/register", {
          body: { email, password: PASSWORD, name: "Ann", workspace_name: "Ann's" }
        })
        const { port } = (yield* HttpServer.HttpServer).address as HttpServer.TcpAddress
        const mail = [...(yield* Ref.get(yield* Mailer.MailOutbox))].find((m) => m.to === email)!
        assert.include(mail.text, `POST http://localhost:${port}/v1/auth/verify-email`)
      }))

    it.effect("answers a wrong password and an unknown e-mail with the same 401", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const wrong = yield* request("POST", "/v1/auth/login", {
          body: { email: user.email, password: "wrong password!!" }
        })
        const unknown = yield* request("POST", "/v1/auth/login", { body: { email: uniqueEmail(), password: PASSWORD } })
        assert.strictEqual(wrong.status, 401)
        assert.strictEqual(unknown.status, 401)
        assert.strictEqual(wrong.body.error.code, "INVALID_CREDENTIALS")
        assert.deepStrictEqual(wrong.body.error, unknown.body.error)
        assert.notInclude(wrong.text, "wrong password!!")
      }))

    it.effect("refuses a second account with the same e-mail", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const dup = yield* request("POST", "/v1/auth/register", {
          body: { email: user.email.toUpperCase(), password: PASSWORD, name: "B", workspace_name: "B" }
        })
        assert.strictEqual(dup.status, 409)
        assert.strictEqual(dup.body.error.code, "CONFLICT")
      }))

    it.effect("rotates refresh tokens and revokes the family when a rotated one is reused", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const first = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: user.refreshToken } })
        assert.strictEqual(first.status, 200)
        assert.notStrictEqual(first.body.refresh_token, user.refreshToken)
        const me = yield* request("GET", "/v1/auth/me", { token: first.body.access_token })
        assert.strictEqual(me.status, 200)
        const reuse = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: user.refreshToken } })
        assert.strictEqual(reuse.status, 401)
        assert.strictEqual(reuse.body.error.code, "UNAUTHORIZED")
        // the whole family is revoked: the newest refresh token and the access tokens stop working
        const newest = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: first.body.refresh_token } })
        assert.strictEqual(newest.status, 401)
        const after = yield* request("GET", "/v1/auth/me", { token: first.body.access_token })
        assert.strictEqual(after.status, 401)
      }))

    it.effect("refreshes from the cookie when the body has no token", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const reply = yield* request("POST", "/v1/auth/refresh", {
          headers: { cookie: `refresh_token=${user.refreshToken}` }
        })
        assert.strictEqual(reply.status, 200)
        const none = yield* request("POST", "/v1/auth/refresh", {})
        assert.strictEqual(none.status, 401)
      }))

    it.effect("stops the session's access tokens at once on logout", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const before = yield* request("GET", "/v1/auth/me", { token: user.accessToken })
        assert.strictEqual(before.status, 200)
        assert.strictEqual(before.body.user.email, user.email)
        assert.strictEqual(before.body.workspaces[0].id, user.workspaceId)
        const logout = yield* request("POST", "/v1/auth/logout", { token: user.accessToken })
        assert.strictEqual(logout.status, 204)
        assert.include(logout.headers["set-cookie"] ?? "", "refresh_token=;")
        const after = yield* request("GET", "/v1/auth/me", { token: user.accessToken })
        assert.strictEqual(after.status, 401)
        const refresh = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: user.refreshToken } })
        assert.strictEqual(refresh.status, 401)
      }))

    it.effect("refuses API keys on /v1/auth/me", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user)
        const reply = yield* request("GET", "/v1/auth/me", { token: key.secret })
        assert.strictEqual(reply.status, 403)
        assert.strictEqual(reply.body.error.code, "FORBIDDEN")
      }))
  })
})
