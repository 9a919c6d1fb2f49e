import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { createKey, eventually, request, sandboxSetup, signUp, waitForMessage } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"

describe("messages through the sandbox", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("accepts a send at once and walks it to read, with timeline and events", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const sent = yield* request("POST", "/v1/messages", { token: key, body: { to: TO, text: { body: "hello" } } })
        assert.strictEqual(sent.status, 201)
        assert.strictEqual(sent.body.status, "queued")
        assert.strictEqual(sent.body.channel_id, session.channel_id)
        assert.strictEqual(sent.body.category, "utility")
        assert.match(sent.body.contact_id, /^cnt_/)
        assert.match(sent.body.conversation_id, /^cnv_/)
        assert.strictEqual(sent.body.from, session.phone_number)
        const read = yield* waitForMessage(key, sent.body.id, (m) => m.status === "read")
        assert.deepStrictEqual(read.timeline.map((t: any) => [t.from_state, t.to_state]), [
          [null, "queued"],
          ["queued", "dispatching"],
          ["dispatching", "provider_accepted"],
          ["provider_accepted", "sent"],
          ["sent", "delivered"],
          ["delivered", "read"]
        ])
        assert.isString(read.sent_at)
        assert.isString(read.delivered_at)
        assert.isString(read.read_at)
        const sql = yield* SqlClient.SqlClient
        const events = yield* sql<{ type: string; envelope: string }>`SELECT type, envelope FROM events
          WHERE object_id = ${sent.body.id} ORDER BY created_at, id`
        assert.deepStrictEqual(events.map((e) => e.type), [
          "message.queued",
          "message.sent",
          "message.delivered",
          "message.read"
        ])
        const delivered = JSON.parse(events[2]!.envelope)
        assert.deepStrictEqual(delivered.data, {
          object: "message",
          object_id: sent.body.id,
          message_id: sent.body.id,
          from_state: "sent",
          to_state: "delivered",
          category: "utility"
        })
        assert.strictEqual(delivered.workspace_id, sent.body.workspace_id)
      }))

    it.effect("dispatches authentication before a waiting marketing backlog", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const marketing: Array<string> = []
        for (let i = 0; i < 6; i++) {
          const r = yield* request("POST", "/v1/messages", {
            token: key,
            body: { to: TO, text: { body: `promo ${i}` }, category: "marketing" }
          })
          marketing.push(r.body.id)
        }
        const auth = yield* request("POST", "/v1/messages", {
          token: key,
          body: { to: TO, text: { body: "code 123456" }, category: "authentication" }
        })
        const authDone = yield* waitForMessage(key, auth.body.id, (m) =>
          m.timeline.some((t: any) =>
            t.to_state === "dispatching"
          ))
        const authAt = Date.parse(authDone.timeline.find((t: any) => t.to_state === "dispatching").at)
        const last = yield* waitForMessage(key, marketing[5]!, (m) =>
          m.timeline.some((t: any) =>
            t.to_state === "dispatching"
          ))
        const lastAt = Date.parse(
          last.timeline.find((t: any) =>
            t.to_state === "dispatching"
          ).at
        )
        assert.isBelow(authAt, lastAt, "the authentication message went before the last marketing one")
        // the marketing ones went in order among themselves
        const starts: Array<number> = []
        for (const id of marketing) {
          const m = yield* waitForMessage(key, id, (x) => x.timeline.some((t: any) => t.to_state === "dispatching"))
          starts.push(Date.parse(m.timeline.find((t: any) => t.to_state === "dispatching").at))
        }
        assert.deepStrictEqual([...starts].sort((a, b) => a - b), starts)
      }))

    it.effect("honours the magic recipients", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const send = (to: string) => request("POST", "/v1/messages", { token: key, body: { to, text: { body: "x" } } })
        const permanent = yield* send("+15005550001")
        const retried = yield* send("+15005550002")
        const staysSent = yield* send("+15005550003")
        const failed = yield* waitForMessage(key, permanent.body.id, (m) => m.status === "failed_permanent")
        assert.strictEqual(failed.failure.class, "permanent")
        const ok = yield* waitForMessage(key, retried.body.id, (m) => m.status === "read", 30_000)
        assert.strictEqual(ok.timeline.filter((t: any) => t.to_state === "failed_retryable").length, 2)
        const sent = yield* waitForMessage(key, staysSent.body.id, (m) => m.status === "sent")
        yield* Effect.sleep("2 seconds")
        const still = yield* request("GET", `/v1/messages/${sent.id}`, { token: key })
        assert.strictEqual(still.body.status, "sent")
        const sql = yield* SqlClient.SqlClient
        const types = yield* sql<
          { type: string; envelope: string }
        >`SELECT type, envelope FROM events WHERE object_id = ${permanent.body.id} AND type = 'message.failed'`
        assert.strictEqual(types.length, 1)
        const data = JSON.parse(types[0]!.envelope).data
        assert.strictEqual(data.failure_class, "permanent")
        assert.strictEqual(data.error_code, "recipient_unreachable")
      }))

    it.effect("replays an idempotent send and refuses another body with the same key", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const body = { to: TO, text: { body: "once" }, metadata: { order: "42", ref: "a" } }
        const first = yield* request("POST", "/v1/messages", {
          token: key,
          body,
          headers: { "idempotency-key": "order-42" }
        })
        assert.strictEqual(first.status, 201)
        assert.isUndefined(first.headers["idempotent-replay"])
        // same members in another order: same fingerprint
        const again = yield* request("POST", "/v1/messages", {
          token: key,
          body: { metadata: { ref: "a", order: "42" }, text: { body: "once" }, to: TO },
          headers: { "idempotency-key": "order-42" }
        })
        assert.strictEqual(again.status, 201)
        assert.strictEqual(again.headers["idempotent-replay"], "true")
        assert.deepStrictEqual(again.body, first.body)
        const other = yield* request("POST", "/v1/messages", {
          token: key,
          body: { ...body, text: { body: "twice" } },
          headers: { "idempotency-key": "order-42" }
        })
        assert.strictEqual(other.status, 409)
        assert.strictEqual(other.body.error.code, "IDEMPOTENCY_CONFLICT")
        const list = yield* request("GET", "/v1/messages", { token: key })
        assert.strictEqual(list.body.data.filter((m: any) => m.text.body === "once").length, 1)
        const long = yield* request("POST", "/v1/messages", {
          token: key,
          body,
          headers: { "idempotency-key": "k".repeat(256) }
        })
        assert.strictEqual(long.status, 422)
      }))

    it.effect("makes one message of 20 concurrent sends with one Idempotency-Key", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const body = { to: TO, text: { body: "race" } }
        const replies = yield* Effect.forEach(
          Array.from({ length: 20 }, () => 0),
          () => request("POST", "/v1/messages", { token: key, body, headers: { "idempotency-key": "race-1" } }),
          { concurrency: "unbounded" }
        )
        const created = replies.filter((r) => r.status === 201)
        const inProgress = replies.filter((r) => r.status === 409)
        assert.strictEqual(created.length + inProgress.length, 20, JSON.stringify(replies.map((r) => r.status)))
        for (const r of inProgress) assert.strictEqual(r.body.error.details.reason, "in_progress")
        assert.strictEqual(new Set(created.map((r) => r.body.id)).size, 1)
        const list = yield* request("GET", "/v1/messages", { token: key })
        assert.strictEqual(list.body.data.filter((m: any) => m.text.body === "race").length, 1)
      }))

    it.effect("never dispatches faster than 2 msg/s on a sandbox channel (recorded dispatch times)", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const ids: Array<string> = []
        for (let i = 0; i < 6; i++) {
          ids.push(
            (yield* request("POST", "/v1/messages", { token: key, body: { to: TO, text: { body: `t${i}` } } })).body.id
          )
        }
        const times: Array<number> = []
        for (const id of ids) {
          const m = yield* waitForMessage(key, id, (x) => x.timeline.some((t: any) => t.to_state === "dispatching"))
          times.push(Date.parse(m.timeline.find((t: any) => t.to_state === "dispatching").at))
        }
        times.sort((a, b) => a - b)
        for (let i = 1; i < times.length; i++) {
          // 500 ms apart at 2 msg/s; allow a few ms of timestamp rounding
          assert.isAtLeast(
            times[i]! - times[i - 1]!,
            495,
            `dispatch ${i} came ${times[i]! - times[i - 1]!} ms after the previous`
          )
        }
      }))

    it.effect("answers in_progress while a key's first request runs, and frees a key whose request died", () =>
      Effect.gen(function*() {
        const { key, user } = yield* sandboxSetup()
        const sql = yield* SqlClient.SqlClient
        const now = Date.now()
        const body = { to: TO, text: { body: "x" } }
        // the fingerprint of `body`: sha256 of its canonical JSON (members sorted)
        const fingerprint = createHash("sha256").update(`{"text":{"body":"x"},"to":"${TO}"}`).digest("hex")
        const claim = (k: string, createdAt: number) =>
          sql`INSERT INTO idempotency_keys (workspace_id, key, fingerprint, state, created_at, expires_at)
            VALUES (${user.workspaceId}, ${k}, ${fingerprint}, 'running', ${new Date(createdAt).toISOString()},
              ${new Date(createdAt + 24 * 3600_000).toISOString()})`
        yield* claim("busy", now)
        yield* claim("dead", now - 5 * 60_000)
        const busy = yield* request("POST", "/v1/messages", {
          token: key,
          body,
          headers: { "idempotency-key": "busy" }
        })
        assert.strictEqual(busy.status, 409)
        assert.strictEqual(busy.body.error.code, "IDEMPOTENCY_CONFLICT")
        assert.strictEqual(busy.body.error.details.reason, "in_progress")
        const dead = yield* request("POST", "/v1/messages", {
          token: key,
          body,
          headers: { "idempotency-key": "dead" }
        })
        assert.strictEqual(dead.status, 201, "a request that died minutes ago does not hold its key")
        const again = yield* request("POST", "/v1/messages", {
          token: key,
          body,
          headers: { "idempotency-key": "dead" }
        })
        assert.strictEqual(again.headers["idempotent-replay"], "true")
        assert.strictEqual(again.body.id, dead.body.id)
      }))

    it.effect("treats an expired Idempotency-Key as new, whatever body it was used with", () =>
      Effect.gen(function*() {
        const { key, user } = yield* sandboxSetup()
        const sql = yield* SqlClient.SqlClient
        const past = Date.now() - 25 * 3600_000
        // used 25 h ago with another body and answered: expired an hour ago
        yield* sql`INSERT INTO idempotency_keys (workspace_id, key, fingerprint, state, response, created_at, expires_at)
          VALUES (${user.workspaceId}, 'old', 'another-body', 'done', '{"id":"msg_stale"}'::jsonb,
            ${new Date(past).toISOString()}, ${new Date(past + 24 * 3600_000).toISOString()})`
        const body = { to: TO, text: { body: "fresh" } }
        const sent = yield* request("POST", "/v1/messages", { token: key, body, headers: { "idempotency-key": "old" } })
        assert.strictEqual(sent.status, 201)
        assert.isUndefined(sent.headers["idempotent-replay"])
        assert.notStrictEqual(sent.body.id, "msg_stale")
        const again = yield* request("POST", "/v1/messages", {
          token: key,
          body,
          headers: { "idempotency-key": "old" }
        })
        assert.strictEqual(again.status, 201)
        assert.strictEqual(again.headers["idempotent-replay"], "true")
        assert.strictEqual(again.body.id, sent.body.id)
      }))

    it.effect("refuses bad sends with the right errors and writes nothing", () =>
      Effect.gen(function*() {
        const { key, user } = yield* sandboxSetup()
        const post = (body: unknown, token = key) => request("POST", "/v1/messages", { token, body })
        const notE164 = yield* post({ to: "0151 1234", text: { body: "x" } })
        assert.strictEqual(notE164.status, 422)
        assert.deepStrictEqual(notE164.body.error.details.issues[0].path, ["to"])
        const noBody = yield* post({ to: TO, text: {} })
        assert.strictEqual(noBody.status, 422)
        assert.deepStrictEqual(noBody.body.error.details.issues[0].path, ["text", "body"])
        const both = yield* post({ to: TO })
        assert.strictEqual(both.status, 422)
        const tooLong = yield* post({ to: TO, text: { body: "x".repeat(4097) } })
        assert.strictEqual(tooLong.status, 422)
        const unknownMember = yield* post({ to: TO, text: { body: "x" }, priority: "high" })
        assert.strictEqual(unknownMember.status, 422)
        assert.strictEqual(unknownMember.body.error.details.issues[0].message, "Unrecognized field \"priority\"")
        const unverified = yield* post({ to: "+4915199999999", text: { body: "x" } })
        assert.strictEqual(unverified.status, 422)
        assert.strictEqual(unverified.body.error.details.reason, "recipient_not_verified")
        const template = yield* post({ to: TO, template: { slug: "welcome" } })
        assert.strictEqual(template.status, 404)
        assert.strictEqual(template.body.error.code, "TEMPLATE_NOT_FOUND")
        const unknownChannel = yield* post({ to: TO, text: { body: "x" }, channel_id: "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" })
        assert.strictEqual(unknownChannel.status, 404)
        assert.strictEqual(unknownChannel.body.error.code, "CHANNEL_NOT_FOUND")
        const live = yield* createKey(user, { mode: "live" })
        const liveSend = yield* post({ to: TO, text: { body: "x" } }, live.secret)
        assert.strictEqual(liveSend.status, 403)
        assert.strictEqual(liveSend.body.error.code, "SANDBOX_TEST_KEY_REQUIRED")
        const list = yield* request("GET", "/v1/messages", { token: key })
        assert.strictEqual(list.body.data.length, 0)
      }))

    it.effect("asks for a channel when the workspace has none", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { mode: "test" })
        const reply = yield* request("POST", "/v1/messages", {
          token: key.secret,
          body: { to: TO, text: { body: "x" } }
        })
        assert.strictEqual(reply.status, 422)
        assert.strictEqual(reply.body.error.details.reason, "channel_required")
      }))

    it.effect("lists newest first with filters, and refuses unknown filter values", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const a = yield* request("POST", "/v1/messages", {
          token: key,
          body: { to: TO, text: { body: "a" }, category: "marketing" }
        })
        const b = yield* request("POST", "/v1/messages", { token: key, body: { to: TO, text: { body: "b" } } })
        const all = yield* request("GET", "/v1/messages", { token: key })
        assert.deepStrictEqual(all.body.data.map((m: any) => m.id), [b.body.id, a.body.id])
        const marketing = yield* request("GET", "/v1/messages?category=marketing", { token: key })
        assert.deepStrictEqual(marketing.body.data.map((m: any) => m.id), [a.body.id])
        const byChannel = yield* request("GET", `/v1/messages?channel_id=${session.channel_id}&direction=outbound`, {
          token: key
        })
        assert.strictEqual(byChannel.body.data.length, 2)
        const bad = yield* request("GET", "/v1/messages?status=teleported", { token: key })
        assert.strictEqual(bad.status, 422)
        assert.deepStrictEqual(bad.body.error.details.issues[0].path, ["status"])
        const badState = yield* request("GET", "/v1/messages?state=nope", { token: key })
        assert.strictEqual(badState.status, 422)
        const unknownChannel = yield* request("GET", "/v1/messages?channel_id=ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z", {
          token: key
        })
        assert.strictEqual(unknownChannel.status, 404)
        assert.strictEqual(unknownChannel.body.error.code, "CHANNEL_NOT_FOUND")
        const missing = yield* request("GET", "/v1/messages/msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z", { token: key })
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(missing.body.error.code, "NOT_FOUND")
        assert.strictEqual(missing.body.error.details.resource, "message")
      }))

    it.effect("records an inbound sandbox message with message.received", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const reply = yield* request("POST", `/v1/sandbox/sessions/${session.id}/inbound`, {
          token: key,
          body: { from: TO, text: { body: "hi there" } }
        })
        assert.strictEqual(reply.status, 202)
        // the simulated network delivers it through the channel's entity, a moment later
        const inbound = yield* eventually(
          request("GET", "/v1/messages?direction=inbound", { token: key }),
          (r) => r.body.data.length > 0
        )
        assert.strictEqual(inbound.body.data.length, 1)
        assert.strictEqual(inbound.body.data[0].status, "delivered")
        assert.strictEqual(inbound.body.data[0].from, TO)
        const sql = yield* SqlClient.SqlClient
        const events = yield* sql<
          { envelope: string }
        >`SELECT envelope FROM events WHERE type = 'message.received' AND object_id = ${inbound.body.data[0].id}`
        const data = JSON.parse(events[0]!.envelope).data
        assert.strictEqual(data.direction, "inbound")
        assert.strictEqual(data.channel_id, session.channel_id)
        assert.strictEqual(data.conversation_id, inbound.body.data[0].conversation_id)
      }))
  })
})
