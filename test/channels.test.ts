import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { createKey, request, sandboxSetup, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"

describe("channels and sandbox sessions", () => {
  layer(TestApp.layer({}, { providers: { sandboxNumbers: ["+15550300001", "+15550300002", "+15550300003"] } }), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.effect("creates qr channels only, pending and unable to send, within the plan", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { mode: "live" })
        const sandbox = yield* request("POST", "/v1/channels", {
          token: key.secret,
          body: { provider: "sandbox", name: "s" }
        })
        assert.strictEqual(sandbox.status, 422)
        assert.include(sandbox.body.error.details.issues[0].message, "sandbox session")
        const cloud = yield* request("POST", "/v1/channels", {
          token: key.secret,
          body: { provider: "cloud", name: "c" }
        })
        assert.strictEqual(cloud.status, 422)
        assert.include(cloud.body.error.details.issues[0].message, "no adapter")
        const qr = yield* request("POST", "/v1/channels", {
          token: key.secret,
          body: { provider: "qr", name: "Support" }
        })
        assert.strictEqual(qr.status, 201)
        assert.strictEqual(qr.body.status, "pending")
        assert.strictEqual(qr.body.provider, "qr")
        assert.isTrue(qr.body.is_default)
        const caps = yield* request("GET", `/v1/channels/${qr.body.id}/capabilities`, { token: key.secret })
        assert.strictEqual(caps.status, 409)
        assert.strictEqual(caps.body.error.details.reason, "capabilities_not_refreshed")
        const send = yield* request("POST", "/v1/messages", {
          token: key.secret,
          body: { to: TO, text: { body: "x" } }
        })
        assert.strictEqual(send.status, 409)
        assert.strictEqual(send.body.error.code, "CHANNEL_NOT_CONNECTED")
        const second = yield* request("POST", "/v1/channels", {
          token: key.secret,
          body: { provider: "qr", name: "Sales" }
        })
        assert.strictEqual(second.status, 409)
        assert.strictEqual(second.body.error.code, "ENTITLEMENT_LIMIT_REACHED")
        assert.strictEqual(second.body.error.details.entitlement, "production_channels")
        assert.strictEqual(second.body.error.details.limit, 1)
      }))

    it.effect("refuses a name already used in the workspace, renames and sets the default", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { mode: "live" })
        const operator = { token: key.secret }
        yield* request("POST", "/v1/channels", { ...operator, body: { provider: "qr", name: "Support" } })
        yield* Effect.flatMap(Operator, (o) => o.setPlan(user.workspaceId, "growth")).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const dup = yield* request("POST", "/v1/channels", { ...operator, body: { provider: "qr", name: "support" } })
        assert.strictEqual(dup.status, 409)
        assert.strictEqual(dup.body.error.code, "CONFLICT")
        const sales = yield* request("POST", "/v1/channels", { ...operator, body: { provider: "qr", name: "Sales" } })
        assert.isFalse(sales.body.is_default)
        const empty = yield* request("PATCH", `/v1/channels/${sales.body.id}`, { ...operator, body: {} })
        assert.strictEqual(empty.status, 422)
        const renamed = yield* request("PATCH", `/v1/channels/${sales.body.id}`, {
          ...operator,
          body: { name: "Sales EU", is_default: true }
        })
        assert.strictEqual(renamed.status, 200)
        assert.strictEqual(renamed.body.name, "Sales EU")
        assert.isTrue(renamed.body.is_default)
        const list = yield* request("GET", "/v1/channels", operator)
        assert.deepStrictEqual(list.body.data.map((c: any) => c.is_default), [true, false])
        const pending = yield* request("GET", "/v1/channels?status=pending", operator)
        assert.strictEqual(pending.body.data.length, 2)
        const bad = yield* request("GET", "/v1/channels?status=sleeping", operator)
        assert.strictEqual(bad.status, 422)
        const missing = yield* request("GET", "/v1/channels/ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z", operator)
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(missing.body.error.code, "CHANNEL_NOT_FOUND")
      }))

    it.effect("archives repeatably, cancelling what was not dispatched, with one channel.archived", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const ids: Array<string> = []
        for (let i = 0; i < 8; i++) {
          ids.push(
            (yield* request("POST", "/v1/messages", { token: key, body: { to: TO, text: { body: `m${i}` } } })).body.id
          )
        }
        const first = yield* request("DELETE", `/v1/channels/${session.channel_id}`, { token: key })
        assert.strictEqual(first.status, 200)
        assert.strictEqual(first.body.status, "archived")
        const again = yield* request("DELETE", `/v1/channels/${session.channel_id}`, { token: key })
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.body.archived_at, first.body.archived_at)
        const last = yield* request("GET", `/v1/messages/${ids[7]}`, { token: key })
        assert.strictEqual(last.body.status, "cancelled")
        const sql = yield* SqlClient.SqlClient
        const archived =
          yield* sql`SELECT 1 FROM events WHERE type = 'channel.archived' AND object_id = ${session.channel_id}`
        assert.strictEqual(archived.length, 1)
        const send = yield* request("POST", "/v1/messages", {
          token: key,
          body: { to: TO, text: { body: "late" }, channel_id: session.channel_id }
        })
        assert.strictEqual(send.status, 409)
      }))

    it.effect("allocates sessions from the pool within the plan and for test keys only", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const live = yield* createKey(user, { mode: "live" })
        const test = yield* createKey(user, { mode: "test" })
        const byLive = yield* request("POST", "/v1/sandbox/sessions", { token: live.secret })
        assert.strictEqual(byLive.status, 403)
        assert.strictEqual(byLive.body.error.code, "SANDBOX_TEST_KEY_REQUIRED")
        const bySession = yield* request("POST", "/v1/sandbox/sessions", {
          token: user.accessToken,
          workspace: user.workspaceId
        })
        assert.strictEqual(bySession.status, 403)
        assert.strictEqual(bySession.body.error.code, "SANDBOX_TEST_KEY_REQUIRED")
        const created = yield* request("POST", "/v1/sandbox/sessions", { token: test.secret })
        assert.strictEqual(created.status, 201)
        assert.match(created.body.verification.code, /^\d{6}$/)
        assert.strictEqual(created.body.status, "active")
        assert.match(created.body.id, /^sbx_/)
        const fetched = yield* request("GET", `/v1/sandbox/sessions/${created.body.id}`, { token: test.secret })
        assert.isUndefined(fetched.body.verification)
        assert.notInclude(fetched.text, created.body.verification.code)
        const channel = yield* request("GET", `/v1/channels/${created.body.channel_id}`, { token: test.secret })
        assert.strictEqual(channel.body.provider, "sandbox")
        assert.strictEqual(channel.body.status, "connected")
        const caps = yield* request("GET", `/v1/channels/${created.body.channel_id}/capabilities`, {
          token: test.secret
        })
        assert.strictEqual(caps.body.max_throughput_mps, 2)
        const second = yield* request("POST", "/v1/sandbox/sessions", { token: test.secret })
        assert.strictEqual(second.status, 409)
        assert.strictEqual(second.body.error.details.entitlement, "shared_test_sessions")
        const wrong = yield* request("POST", `/v1/sandbox/sessions/${created.body.id}/verify`, {
          token: test.secret,
          body: { phone_number: TO, code: created.body.verification.code === "000000" ? "111111" : "000000" }
        })
        assert.strictEqual(wrong.status, 422)
        assert.strictEqual(wrong.body.error.details.reason, "invalid_code")
        const revoked = yield* request("DELETE", `/v1/sandbox/sessions/${created.body.id}`, { token: test.secret })
        assert.strictEqual(revoked.body.status, "revoked")
        const archived = yield* request("GET", `/v1/channels/${created.body.channel_id}`, { token: test.secret })
        assert.strictEqual(archived.body.status, "archived")
      }))

    it.effect("answers 503 when every number of the pool is taken", () =>
      Effect.gen(function*() {
        // the pool has three numbers; other tests of this file may hold some
        let last = 0
        for (let i = 0; i < 4 && last !== 503; i++) {
          const user = yield* signUp()
          const key = yield* createKey(user, { mode: "test" })
          last = (yield* request("POST", "/v1/sandbox/sessions", { token: key.secret })).status
        }
        assert.strictEqual(last, 503)
      }))
  })
})
