import { HttpServer } from "@effect/platform"
import { assert, describe, layer } from "@effect/vitest"
import { Mailer } from "@switchboard/service-api"
import { Effect, Ref } from "effect"
import { api, createKey, mailedToken, PASSWORD, refused, request, signUp, uniqueEmail } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

describe("users and sessions", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refuses login before the e-mail is verified, then accepts it", () =>
      Effect.gen(function*() {
        const email = uniqueEmail()
        const client = yield* api()
        // the typed client decodes the declared 201 only
        const registered = yield* client.auth.register({
          payload: { email, password: PASSWORD, name: "Ann", workspace_name: "Ann's" }
        })
        assert.match(registered.user.id, /^usr_[0-9A-Z]{26}$/)
        assert.strictEqual(registered.workspace.plan, "free")
        assert.isNull(registered.user.email_verified_at)
        const early = yield* refused(client.auth.login({ payload: { email, password: PASSWORD } }))
        assert.strictEqual(early.status, 403)
        assert.strictEqual(early.code, "EMAIL_NOT_VERIFIED")
        const token = yield* mailedToken(email)
        const verified = yield* client.auth.verifyEmail({ payload: { token } })
        assert.isString(verified.user.email_verified_at)
        const again = yield* refused(client.auth.verifyEmail({ payload: { token } }))
        assert.strictEqual(again.status, 422)
        assert.strictEqual(again.details.reason, "invalid_token")
        // raw: the test reads the Set-Cookie header, which the typed client does not show
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
        yield* (yield* api()).auth.register({
          payload: { email, password: PASSWORD, name: "Ann", workspace_name: "Ann's" }
        })
        const { port } = (yield* HttpServer.HttpServer).address as HttpServer.TcpAddress
        const mail = [...(yield* Ref.get(yield* Mailer.MailOutbox))].find((m) => m.to === email)!
        assert.include(mail.text, `POST http://localhost:${port}/v1/auth/verify-email`)
      }))

    it.effect("answers a wrong password and an unknown e-mail with the same 401", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        // raw: the test compares the two bodies whole and checks the password is not echoed anywhere
        const wrong = yield* request("POST", "/v1/auth/login", {
          body: { email: user.email, password: "wrong password!!" }
        })
        // raw: compared whole with the answer above
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
        const dup = yield* refused((yield* api()).auth.register({
          payload: { email: user.email.toUpperCase(), password: PASSWORD, name: "B", workspace_name: "B" }
        }))
        assert.strictEqual(dup.status, 409)
        assert.strictEqual(dup.code, "CONFLICT")
      }))

    it.effect("rotates refresh tokens and revokes the family when a rotated one is reused", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        // raw refreshes: the contract declares no body for refresh (the token may come as a cookie)
        const first = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: user.refreshToken } })
        assert.strictEqual(first.status, 200)
        assert.notStrictEqual(first.body.refresh_token, user.refreshToken)
        const rotated = yield* api(first.body.access_token)
        const me = yield* rotated.session.me()
        assert.strictEqual(me.user.email, user.email)
        // raw: a refresh with the token in the body, which the contract does not declare
        const reuse = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: user.refreshToken } })
        assert.strictEqual(reuse.status, 401)
        assert.strictEqual(reuse.body.error.code, "UNAUTHORIZED")
        // the whole family is revoked: the newest refresh token and the access tokens stop working
        // raw: a refresh with the token in the body, which the contract does not declare
        const newest = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: first.body.refresh_token } })
        assert.strictEqual(newest.status, 401)
        const after = yield* refused(rotated.session.me())
        assert.strictEqual(after.status, 401)
      }))

    it.effect("refreshes from the cookie when the body has no token", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        // raw: the refresh token sent as a Cookie header
        const reply = yield* request("POST", "/v1/auth/refresh", {
          headers: { cookie: `refresh_token=${user.refreshToken}` }
        })
        assert.strictEqual(reply.status, 200)
        const none = yield* refused((yield* api()).auth.refresh())
        assert.strictEqual(none.status, 401)
      }))

    it.effect("stops the session's access tokens at once on logout", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const session = yield* api(user.accessToken)
        const before = yield* session.session.me()
        assert.strictEqual(before.user.email, user.email)
        assert.strictEqual(before.workspaces[0]!.id, user.workspaceId)
        // raw: the test reads the Set-Cookie header that clears the cookie
        const logout = yield* request("POST", "/v1/auth/logout", { token: user.accessToken })
        assert.strictEqual(logout.status, 204)
        assert.include(logout.headers["set-cookie"] ?? "", "refresh_token=;")
        const after = yield* refused(session.session.me())
        assert.strictEqual(after.status, 401)
        // raw: a refresh with the token in the body, which the contract does not declare
        const refresh = yield* request("POST", "/v1/auth/refresh", { body: { refresh_token: user.refreshToken } })
        assert.strictEqual(refresh.status, 401)
      }))

    it.effect("refuses API keys on /v1/auth/me", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user)
        const reply = yield* refused((yield* api(key.secret)).session.me())
        assert.strictEqual(reply.status, 403)
        assert.strictEqual(reply.code, "FORBIDDEN")
      }))
  })
})
