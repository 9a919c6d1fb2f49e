import { assert, describe, layer } from "@effect/vitest"
import { Pagination } from "@switchboard/domain"
import { Operator } from "@switchboard/service-api"
import { Effect, Schema } from "effect"
import { api, createKey, PASSWORD, refused, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

describe("API keys", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("shows the secret once, with default scopes that leave out webhooks.manage", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        // the typed client decodes the declared 201 only
        const created = yield* (yield* api(user.accessToken, user.workspaceId)).apiKeys.create({
          payload: { name: "server", mode: "live" }
        })
        assert.match(created.secret, /^wa_live_[0-9A-Za-z]{40}$/)
        assert.strictEqual(created.prefix, "wa_live")
        assert.strictEqual(created.last4, created.secret.slice(-4))
        assert.notInclude(created.scopes, "webhooks.manage")
        assert.include(created.scopes, "messages.send")
        assert.strictEqual(created.scopes.length, 11)
        // raw: the test is about what the body leaves out, which a decoded list would hide
        const listed = yield* request("GET", "/v1/api-keys", { token: created.secret })
        assert.strictEqual(listed.status, 200)
        assert.strictEqual(listed.body.data.length, 1)
        assert.isUndefined(listed.body.data[0].secret)
        assert.notInclude(listed.text, created.secret)
        assert.strictEqual(listed.body.data[0].last4, created.last4)
        assert.isString(listed.body.data[0].last_used_at)
        assert.deepStrictEqual(listed.body.page, { next_cursor: null, has_more: false })
      }))

    it.effect("keeps webhooks.manage when asked for explicitly", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { scopes: ["webhooks.manage", "messages.read"] })
        assert.deepStrictEqual([...key.scopes].sort(), ["messages.read", "webhooks.manage"])
      }))

    it.effect("refuses an unknown scope, an unknown member and a past expiry with 422", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const post = (body: unknown) =>
          // raw: an unknown scope and an unknown member are bodies the typed client would not send
          request("POST", "/v1/api-keys", { token: user.accessToken, workspace: user.workspaceId, body })
        const scope = yield* post({ name: "k", mode: "test", scopes: ["messages.fly"] })
        assert.strictEqual(scope.status, 422)
        assert.strictEqual(scope.body.error.code, "VALIDATION_ERROR")
        assert.deepStrictEqual(scope.body.error.details.issues[0].path, ["scopes", 0])
        assert.notInclude(scope.text, "messages.fly")
        const member = yield* post({ name: "k", mode: "test", colour: "red" })
        assert.strictEqual(member.status, 422)
        // the unknown member is not named back: reported at its object, with the names it takes
        assert.deepStrictEqual(member.body.error.details.issues[0].path, [])
        assert.match(member.body.error.details.issues[0].message, /^Unknown member; this object takes name, /)
        assert.notInclude(member.text, "colour")
        const past = yield* refused((yield* api(user.accessToken, user.workspaceId)).apiKeys.create({
          payload: { name: "k", mode: "test", expires_at: "2001-01-01T00:00:00.000Z" }
        }))
        assert.strictEqual(past.status, 422)
        // the server's refusal, not the client's (which would say `sent: false`)
        assert.isUndefined(past.details.sent)
        assert.deepStrictEqual(past.details.issues[0].path, ["expires_at"])
      }))

    it.effect("revokes at once and repeats the original revoked_at", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user)
        const byKey = yield* api(key.secret)
        const bySession = yield* api(user.accessToken, user.workspaceId)
        const ok = yield* byKey.apiKeys.list({ urlParams: {} })
        assert.strictEqual(ok.data.length, 1)
        const first = yield* bySession.apiKeys.revoke({ path: { keyId: key.id } })
        assert.strictEqual(first.id, key.id)
        const after = yield* refused(byKey.apiKeys.list({ urlParams: {} }))
        assert.strictEqual(after.status, 401)
        assert.strictEqual(after.code, "UNAUTHORIZED")
        const second = yield* bySession.apiKeys.revoke({ path: { keyId: key.id } })
        assert.strictEqual(second.revoked_at, first.revoked_at)
        const listed = yield* bySession.apiKeys.list({ urlParams: {} })
        assert.strictEqual(listed.data[0]!.revoked_at, first.revoked_at)
      }))

    it.effect("answers API_KEY_NOT_FOUND for a key of another workspace", () =>
      Effect.gen(function*() {
        const owner = yield* signUp()
        const other = yield* signUp()
        const key = yield* createKey(owner)
        const reply = yield* refused(
          (yield* api(other.accessToken, other.workspaceId)).apiKeys.revoke({ path: { keyId: key.id } })
        )
        assert.strictEqual(reply.status, 404)
        assert.strictEqual(reply.code, "API_KEY_NOT_FOUND")
        const still = yield* (yield* api(key.secret)).apiKeys.list({ urlParams: {} })
        assert.strictEqual(still.data[0]!.id, key.id)
      }))

    it.effect("applies the workspace header rules", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const other = yield* signUp()
        const key = yield* createKey(user)
        const list = (token: string, workspace?: string) =>
          Effect.flatMap(api(token, workspace), (client) => client.apiKeys.list({ urlParams: {} }))
        const noHeader = yield* refused(list(user.accessToken))
        assert.strictEqual(noHeader.status, 400)
        assert.strictEqual(noHeader.code, "WORKSPACE_CONTEXT_REQUIRED")
        const notMember = yield* refused(list(user.accessToken, other.workspaceId))
        assert.strictEqual(notMember.status, 403)
        assert.strictEqual(notMember.code, "FORBIDDEN")
        const mismatch = yield* refused(list(key.secret, other.workspaceId))
        assert.strictEqual(mismatch.status, 403)
        const same = yield* list(key.secret, user.workspaceId)
        assert.strictEqual(same.data[0]!.id, key.id)
        const malformed = yield* refused(list(key.secret, "nope"))
        assert.strictEqual(malformed.status, 422)
      }))

    it.effect("accepts any case of the Bearer scheme and nothing else", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user)
        const withHeaders = (headers: Record<string, string>) =>
          // raw: the Authorization scheme's case and other headers are the test; the typed client sends `Bearer`
          request("GET", "/v1/api-keys", { headers })
        const lower = yield* withHeaders({ authorization: `bearer ${key.secret}` })
        assert.strictEqual(lower.status, 200)
        const mixed = yield* withHeaders({ authorization: `BeArEr ${key.secret}` })
        assert.strictEqual(mixed.status, 200)
        const basic = yield* withHeaders({ authorization: `Basic ${key.secret}` })
        assert.strictEqual(basic.status, 401)
        const xApiKey = yield* withHeaders({ "x-api-key": key.secret })
        assert.strictEqual(xApiKey.status, 401)
        const garbage = yield* refused((yield* api("wa_test_short")).apiKeys.list({ urlParams: {} }))
        assert.strictEqual(garbage.status, 401)
      }))

    it.effect("pages newest first with an opaque cursor", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const ids: Array<string> = []
        for (let i = 0; i < 3; i++) ids.push((yield* createKey(user, { name: `k${i}` })).id)
        const client = yield* api(user.accessToken, user.workspaceId)
        const first = yield* client.apiKeys.list({ urlParams: { limit: 2 } })
        assert.deepStrictEqual(first.data.map((k) => k.id), [ids[2], ids[1]])
        assert.isTrue(first.page.has_more)
        const second = yield* client.apiKeys.list({
          urlParams: { limit: 2, after: Schema.decodeSync(Pagination.Cursor)(first.page.next_cursor!) }
        })
        assert.deepStrictEqual(second.data.map((k) => k.id), [ids[0]])
        assert.deepStrictEqual(second.page, { next_cursor: null, has_more: false })
      }))

    it.effect("refuses a suspended workspace's keys and its users", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user)
        const operator = yield* Operator.Operator
        yield* operator.setStatus(user.workspaceId, "suspended")
        const byKey = yield* refused((yield* api(key.secret)).apiKeys.list({ urlParams: {} }))
        assert.strictEqual(byKey.status, 401)
        const byUser = yield* refused((yield* api(user.accessToken, user.workspaceId)).apiKeys.list({ urlParams: {} }))
        assert.strictEqual(byUser.status, 403)
        assert.strictEqual(byUser.code, "WORKSPACE_SUSPENDED")
        yield* operator.setStatus(user.userId, "suspended")
        const suspended = yield* refused((yield* api()).auth.login({
          payload: { email: user.email, password: PASSWORD }
        }))
        assert.strictEqual(suspended.status, 403)
        assert.strictEqual(suspended.code, "ACCOUNT_SUSPENDED")
      }).pipe(Effect.provide(TestApp.operatorLayer)))
  })
})
