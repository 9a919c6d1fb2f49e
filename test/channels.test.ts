import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { toSwitchboardError } from "@switchboard/sdk"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { api, createKey, refused, request, sandboxSetup, signUp } from "./support/Fixtures.js"
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
        const client = yield* api(key.secret)
        const sandbox = yield* refused(client.channels.create({ payload: { provider: "sandbox", name: "s" } }))
        assert.strictEqual(sandbox.status, 422)
        assert.include(sandbox.details["issues"][0].message, "sandbox session")
        const cloud = yield* refused(client.channels.create({ payload: { provider: "cloud", name: "c" } }))
        assert.strictEqual(cloud.status, 422)
        assert.include(cloud.details["issues"][0].message, "no adapter")
        const [qr, qrResponse] = yield* client.channels.create({
          payload: { provider: "qr", name: "Support" },
          withResponse: true
        })
        assert.strictEqual(qrResponse.status, 201)
        assert.strictEqual(qr.status, "pending")
        assert.strictEqual(qr.provider, "qr")
        assert.isTrue(qr.is_default)
        const caps = yield* refused(client.channels.capabilities({ path: { channelId: qr.id } }))
        assert.strictEqual(caps.status, 409)
        assert.strictEqual(caps.details["reason"], "capabilities_not_refreshed")
        const send = yield* refused(client.messages.send({ payload: { to: TO, text: { body: "x" } }, headers: {} }))
        assert.strictEqual(send.status, 409)
        assert.strictEqual(send.code, "CHANNEL_NOT_CONNECTED")
        const second = yield* refused(client.channels.create({ payload: { provider: "qr", name: "Sales" } }))
        assert.strictEqual(second.status, 409)
        assert.strictEqual(second.code, "ENTITLEMENT_LIMIT_REACHED")
        assert.strictEqual(second.details["entitlement"], "production_channels")
        assert.strictEqual(second.details["limit"], 1)
        // at the limit, a name already used is still the request's own mistake: said first
        const duplicate = yield* refused(client.channels.create({ payload: { provider: "qr", name: "SUPPORT" } }))
        assert.strictEqual(duplicate.status, 409)
        assert.strictEqual(duplicate.code, "CONFLICT")
        assert.strictEqual(duplicate.details["reason"], "name_taken")
      }))

    it.effect("refuses a name already used in the workspace, renames and sets the default", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { mode: "live" })
        const operator = { token: key.secret }
        const client = yield* api(key.secret)
        yield* client.channels.create({ payload: { provider: "qr", name: "Support" } })
        yield* Effect.flatMap(Operator.Operator, (o) => o.setPlan(user.workspaceId, "growth")).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const dup = yield* refused(client.channels.create({ payload: { provider: "qr", name: "support" } }))
        assert.strictEqual(dup.status, 409)
        assert.strictEqual(dup.code, "CONFLICT")
        const sales = yield* client.channels.create({ payload: { provider: "qr", name: "Sales" } })
        assert.isFalse(sales.is_default)
        // raw: an empty patch is malformed input the typed client would not send
        const empty = yield* request("PATCH", `/v1/channels/${sales.id}`, { ...operator, body: {} })
        assert.strictEqual(empty.status, 422)
        const [renamed, renamedResponse] = yield* client.channels.update({
          path: { channelId: sales.id },
          payload: { name: "Sales EU", is_default: true },
          withResponse: true
        })
        assert.strictEqual(renamedResponse.status, 200)
        assert.strictEqual(renamed.name, "Sales EU")
        assert.isTrue(renamed.is_default)
        const list = yield* client.channels.list({ urlParams: {} })
        assert.deepStrictEqual(list.data.map((c) => c.is_default), [true, false])
        const pending = yield* client.channels.list({ urlParams: { status: "pending" } })
        assert.strictEqual(pending.data.length, 2)
        // raw: an unknown status filter is a value the typed client would not send
        const bad = yield* request("GET", "/v1/channels?status=sleeping", operator)
        assert.strictEqual(bad.status, 422)
        const missing = yield* refused(client.channels.get({ path: { channelId: "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" } }))
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(missing.code, "CHANNEL_NOT_FOUND")
      }))

    it.effect("archives repeatably, cancelling what was not dispatched, with one channel.archived", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const client = yield* api(key)
        const ids: Array<string> = []
        for (let i = 0; i < 8; i++) {
          ids.push((yield* client.messages.send({ payload: { to: TO, text: { body: `m${i}` } }, headers: {} })).id)
        }
        const channelId = session.channel_id as `ch_${string}`
        const [first, firstResponse] = yield* client.channels.archive({ path: { channelId }, withResponse: true })
        assert.strictEqual(firstResponse.status, 200)
        assert.strictEqual(first.status, "archived")
        const [again, againResponse] = yield* client.channels.archive({ path: { channelId }, withResponse: true })
        assert.strictEqual(againResponse.status, 200)
        assert.strictEqual(again.archived_at, first.archived_at)
        const last = yield* client.messages.get({ path: { messageId: ids[7]! as `msg_${string}` } })
        assert.strictEqual(last.status, "cancelled")
        const sql = yield* SqlClient.SqlClient
        const archived =
          yield* sql`SELECT 1 FROM events WHERE type = 'channel.archived' AND object_id = ${session.channel_id}`
        assert.strictEqual(archived.length, 1)
        const send = yield* refused(client.messages.send({
          payload: { to: TO, text: { body: "late" }, channel_id: channelId },
          headers: {}
        }))
        assert.strictEqual(send.status, 409)
      }))

    it.effect("allocates sessions from the pool within the plan and for test keys only", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const live = yield* createKey(user, { mode: "live" })
        const test = yield* createKey(user, { mode: "test" })
        const byLive = yield* refused((yield* api(live.secret)).sandbox.create())
        assert.strictEqual(byLive.status, 403)
        assert.strictEqual(byLive.code, "SANDBOX_TEST_KEY_REQUIRED")
        const bySession = yield* refused((yield* api(user.accessToken, user.workspaceId)).sandbox.create())
        assert.strictEqual(bySession.status, 403)
        assert.strictEqual(bySession.code, "SANDBOX_TEST_KEY_REQUIRED")
        const client = yield* api(test.secret)
        const [created, createdResponse] = yield* client.sandbox.create({ withResponse: true })
        assert.strictEqual(createdResponse.status, 201)
        assert.match(created.verification.code, /^\d{6}$/)
        assert.strictEqual(created.status, "active")
        assert.match(created.id, /^sbx_/)
        // raw: what the answer must NOT contain is invisible once decoded
        const fetched = yield* request("GET", `/v1/sandbox/sessions/${created.id}`, { token: test.secret })
        assert.isUndefined((fetched.body as { verification?: unknown }).verification)
        assert.notInclude(fetched.text, created.verification.code)
        const channel = yield* client.channels.get({ path: { channelId: created.channel_id } })
        assert.strictEqual(channel.provider, "sandbox")
        assert.strictEqual(channel.status, "connected")
        const caps = yield* client.channels.capabilities({ path: { channelId: created.channel_id } })
        assert.strictEqual(caps.max_throughput_mps, 2)
        const second = yield* refused(client.sandbox.create())
        assert.strictEqual(second.status, 409)
        assert.strictEqual(second.details["entitlement"], "shared_test_sessions")
        const wrong = yield* refused(client.sandbox.verify({
          path: { sessionId: created.id },
          payload: { phone_number: TO, code: created.verification.code === "000000" ? "111111" : "000000" }
        }))
        assert.strictEqual(wrong.status, 422)
        assert.strictEqual(wrong.details["reason"], "invalid_code")
        const revoked = yield* client.sandbox.revoke({ path: { sessionId: created.id } })
        assert.strictEqual(revoked.status, "revoked")
        const archived = yield* client.channels.get({ path: { channelId: created.channel_id } })
        assert.strictEqual(archived.status, "archived")
      }))

    it.effect("keeps call policies to QR channels: a sandbox channel's is 409, its default shown", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const path = `/v1/channels/${session.channel_id}`
        const shown = yield* request("GET", path, { token: key })
        assert.deepStrictEqual(shown.body.call_policy, { reject: false, reply_text: null })
        const refusedPolicy = yield* request("PATCH", path, {
          token: key,
          body: { call_policy: { reject: true, reply_text: null } }
        })
        assert.strictEqual(refusedPolicy.status, 409, refusedPolicy.text)
        assert.strictEqual(refusedPolicy.body.error.code, "CHANNEL_CAPABILITY_UNAVAILABLE")
        assert.strictEqual(refusedPolicy.body.error.details.reason, "not_a_qr_channel")
        // a reply of whitespace alone is refused before anything else, on any channel
        for (const replyText of [" ", " \n\t ", "\u00a0\u3000", "\u200b", "\u3164\u3164", "\u2800", "\u00ad\u2060"]) {
          const blank = yield* request("PATCH", path, {
            token: key,
            body: { call_policy: { reject: true, reply_text: replyText } }
          })
          assert.strictEqual(blank.status, 422, blank.text)
          assert.strictEqual(blank.body.error.code, "VALIDATION_ERROR")
          const [issue] = blank.body.error.details.issues
          assert.deepStrictEqual(issue.path, ["call_policy", "reply_text"])
          assert.match(issue.message, /^Expected text, not only whitespace/)
        }
      }))

    it.effect("answers 503 when every number of the pool is taken", () =>
      Effect.gen(function*() {
        // the pool has three numbers; other tests of this file may hold some
        let last = 0
        for (let i = 0; i < 4 && last !== 503; i++) {
          const user = yield* signUp()
          const key = yield* createKey(user, { mode: "test" })
          const client = yield* api(key.secret)
          last = yield* client.sandbox.create({ withResponse: true }).pipe(
            Effect.match({
              onSuccess: ([, response]) => response.status,
              onFailure: (error) => toSwitchboardError(error).status ?? 0
            })
          )
        }
        assert.strictEqual(last, 503)
      }))
  })
})
