import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { toSwitchboardError } from "@switchboard/sdk"
import { Effect, Either } from "effect"
import { createHash } from "node:crypto"
import {
  api,
  createKey,
  envelopeOf,
  eventually,
  refused,
  request,
  sandboxSetup,
  signUp,
  waitForMessage
} from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"
const UNKNOWN_CHANNEL = "ch_01JD7X6F3Q9T2M5N8R4V0W1Y2Z"

/** The dispatch time of a message (its `dispatching` transition). */
const dispatchedAt = (m: { readonly timeline: ReadonlyArray<{ readonly to_state: string; readonly at: string }> }) =>
  Date.parse(m.timeline.find((t) => t.to_state === "dispatching")!.at)

describe("messages through the sandbox", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("accepts a send at once and walks it to read, with timeline and events", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const client = yield* api(key)
        const [sent, response] = yield* client.messages.send({
          payload: { to: TO, text: { body: "hello" } },
          headers: {},
          withResponse: true
        })
        assert.strictEqual(response.status, 201)
        assert.strictEqual(sent.status, "queued")
        assert.strictEqual(sent.channel_id, session.channel_id)
        assert.strictEqual(sent.category, "utility")
        assert.match(sent.contact_id!, /^cnt_/)
        assert.match(sent.conversation_id, /^cnv_/)
        assert.strictEqual(sent.from, session.phone_number)
        const read = yield* waitForMessage(key, sent.id, (m) => m.status === "read")
        assert.deepStrictEqual(read.timeline.map((t) => [t.from_state, t.to_state]), [
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
          WHERE object_id = ${sent.id} ORDER BY created_at, id`
        assert.deepStrictEqual(events.map((e) => e.type), [
          "message.queued",
          "message.sent",
          "message.delivered",
          "message.read"
        ])
        const delivered = JSON.parse(events[2]!.envelope)
        assert.deepStrictEqual(delivered.data, {
          object: "message",
          object_id: sent.id,
          message_id: sent.id,
          from_state: "sent",
          to_state: "delivered",
          category: "utility"
        })
        assert.strictEqual(delivered.workspace_id, sent.workspace_id)
      }))

    it.effect("dispatches authentication before a waiting marketing backlog", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const client = yield* api(key)
        const marketing: Array<string> = []
        for (let i = 0; i < 6; i++) {
          const m = yield* client.messages.send({
            payload: { to: TO, text: { body: `promo ${i}` }, category: "marketing" },
            headers: {}
          })
          marketing.push(m.id)
        }
        const auth = yield* client.messages.send({
          payload: { to: TO, text: { body: "code 123456" }, category: "authentication" },
          headers: {}
        })
        const authDone = yield* waitForMessage(
          key,
          auth.id,
          (m) => m.timeline.some((t) => t.to_state === "dispatching")
        )
        const authAt = dispatchedAt(authDone)
        const last = yield* waitForMessage(
          key,
          marketing[5]!,
          (m) => m.timeline.some((t) => t.to_state === "dispatching")
        )
        const lastAt = dispatchedAt(last)
        assert.isBelow(authAt, lastAt, "the authentication message went before the last marketing one")
        // the marketing ones went in order among themselves
        const starts: Array<number> = []
        for (const id of marketing) {
          const m = yield* waitForMessage(key, id, (x) => x.timeline.some((t) => t.to_state === "dispatching"))
          starts.push(dispatchedAt(m))
        }
        assert.deepStrictEqual([...starts].sort((a, b) => a - b), starts)
      }))

    it.effect("honours the magic recipients", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const client = yield* api(key)
        const send = (to: string) => client.messages.send({ payload: { to, text: { body: "x" } }, headers: {} })
        const permanent = yield* send("+15005550001")
        const retried = yield* send("+15005550002")
        const staysSent = yield* send("+15005550003")
        const failed = yield* waitForMessage(key, permanent.id, (m) => m.status === "failed_permanent")
        assert.strictEqual(failed.failure?.class, "permanent")
        const ok = yield* waitForMessage(key, retried.id, (m) => m.status === "read", 30_000)
        assert.strictEqual(ok.timeline.filter((t) => t.to_state === "failed_retryable").length, 2)
        const sent = yield* waitForMessage(key, staysSent.id, (m) => m.status === "sent")
        yield* Effect.sleep("2 seconds")
        const still = yield* client.messages.get({ path: { messageId: sent.id } })
        assert.strictEqual(still.status, "sent")
        const sql = yield* SqlClient.SqlClient
        const types = yield* sql<
          { type: string; envelope: string }
        >`SELECT type, envelope FROM events WHERE object_id = ${permanent.id} AND type = 'message.failed'`
        assert.strictEqual(types.length, 1)
        const data = JSON.parse(types[0]!.envelope).data
        assert.strictEqual(data.failure_class, "permanent")
        assert.strictEqual(data.error_code, "recipient_unreachable")
      }))

    it.effect("replays an idempotent send and refuses another body with the same key", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const client = yield* api(key)
        const body = { to: TO, text: { body: "once" }, metadata: { order: "42", ref: "a" } }
        const [first, firstResponse] = yield* client.messages.send({
          payload: body,
          headers: { "idempotency-key": "order-42" },
          withResponse: true
        })
        assert.strictEqual(firstResponse.status, 201)
        assert.isUndefined(firstResponse.headers["idempotent-replay"])
        // same members in another order: same fingerprint
        const [again, againResponse] = yield* client.messages.send({
          payload: { metadata: { ref: "a", order: "42" }, text: { body: "once" }, to: TO },
          headers: { "idempotency-key": "order-42" },
          withResponse: true
        })
        assert.strictEqual(againResponse.status, 201)
        assert.strictEqual(againResponse.headers["idempotent-replay"], "true")
        assert.deepStrictEqual(again, first)
        const other = yield* refused(client.messages.send({
          payload: { ...body, text: { body: "twice" } },
          headers: { "idempotency-key": "order-42" }
        }))
        assert.strictEqual(other.status, 409)
        assert.strictEqual(other.code, "IDEMPOTENCY_CONFLICT")
        const list = yield* client.messages.list({ urlParams: {} })
        assert.strictEqual(list.data.filter((m) => m.text?.body === "once").length, 1)
        // raw: an over-long key is malformed input the typed client would not send
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
        const client = yield* api(key)
        const body = { to: TO, text: { body: "race" } }
        const replies = yield* Effect.forEach(
          Array.from({ length: 20 }, () => 0),
          () => client.messages.send({ payload: body, headers: { "idempotency-key": "race-1" } }).pipe(Effect.either),
          { concurrency: "unbounded" }
        )
        const created = replies.filter(Either.isRight).map((r) => r.right)
        const inProgress = replies.filter(Either.isLeft).map((r) => toSwitchboardError(r.left))
        assert.strictEqual(
          created.length + inProgress.filter((e) => e.status === 409).length,
          20,
          JSON.stringify(inProgress.map((e) => e.status))
        )
        for (const e of inProgress) assert.strictEqual(e.details["reason"], "in_progress")
        assert.strictEqual(new Set(created.map((m) => m.id)).size, 1)
        const list = yield* client.messages.list({ urlParams: {} })
        assert.strictEqual(list.data.filter((m) => m.text?.body === "race").length, 1)
      }))

    it.effect("never dispatches faster than 2 msg/s on a sandbox channel (recorded dispatch times)", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup()
        const client = yield* api(key)
        const ids: Array<string> = []
        for (let i = 0; i < 6; i++) {
          ids.push((yield* client.messages.send({ payload: { to: TO, text: { body: `t${i}` } }, headers: {} })).id)
        }
        const times: Array<number> = []
        for (const id of ids) {
          const m = yield* waitForMessage(key, id, (x) => x.timeline.some((t) => t.to_state === "dispatching"))
          times.push(dispatchedAt(m))
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
        const client = yield* api(key)
        const busy = yield* refused(client.messages.send({ payload: body, headers: { "idempotency-key": "busy" } }))
        assert.strictEqual(busy.status, 409)
        assert.strictEqual(busy.code, "IDEMPOTENCY_CONFLICT")
        assert.strictEqual(busy.details["reason"], "in_progress")
        const [dead, deadResponse] = yield* client.messages.send({
          payload: body,
          headers: { "idempotency-key": "dead" },
          withResponse: true
        })
        assert.strictEqual(deadResponse.status, 201, "a request that died minutes ago does not hold its key")
        const [again, againResponse] = yield* client.messages.send({
          payload: body,
          headers: { "idempotency-key": "dead" },
          withResponse: true
        })
        assert.strictEqual(againResponse.headers["idempotent-replay"], "true")
        assert.strictEqual(again.id, dead.id)
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
        const client = yield* api(key)
        const [sent, sentResponse] = yield* client.messages.send({
          payload: body,
          headers: { "idempotency-key": "old" },
          withResponse: true
        })
        assert.strictEqual(sentResponse.status, 201)
        assert.isUndefined(sentResponse.headers["idempotent-replay"])
        assert.notStrictEqual(sent.id, "msg_stale")
        const [again, againResponse] = yield* client.messages.send({
          payload: body,
          headers: { "idempotency-key": "old" },
          withResponse: true
        })
        assert.strictEqual(againResponse.status, 201)
        assert.strictEqual(againResponse.headers["idempotent-replay"], "true")
        assert.strictEqual(again.id, sent.id)
      }))

    it.effect("refuses bad sends with the right errors and writes nothing", () =>
      Effect.gen(function*() {
        const { key, user } = yield* sandboxSetup()
        // raw: malformed input the typed client would refuse to send
        const post = (body: unknown) => request("POST", "/v1/messages", { token: key, body })
        const notE164 = yield* post({ to: "0151 1234", text: { body: "x" } })
        assert.strictEqual(notE164.status, 422)
        assert.deepStrictEqual(envelopeOf(notE164).details.issues[0].path, ["to"])
        const noBody = yield* post({ to: TO, text: {} })
        assert.strictEqual(noBody.status, 422)
        assert.deepStrictEqual(envelopeOf(noBody).details.issues[0].path, ["text", "body"])
        const both = yield* post({ to: TO })
        assert.strictEqual(both.status, 422)
        const tooLong = yield* post({ to: TO, text: { body: "x".repeat(4097) } })
        assert.strictEqual(tooLong.status, 422)
        const unknownMember = yield* post({ to: TO, text: { body: "x" }, priority: "high" })
        assert.strictEqual(unknownMember.status, 422)
        assert.match(envelopeOf(unknownMember).details.issues[0].message, /^Unknown member; this object takes to, /)
        assert.notInclude(unknownMember.text, "priority")
        // well-formed requests the server refuses: through the typed client
        const client = yield* api(key)
        const send = (payload: Parameters<typeof client.messages.send>[0]["payload"], c = client) =>
          refused(c.messages.send({ payload, headers: {} }))
        const unverified = yield* send({ to: "+4915199999999", text: { body: "x" } })
        assert.strictEqual(unverified.status, 422)
        assert.strictEqual(unverified.details["reason"], "recipient_not_verified")
        const template = yield* send({ to: TO, template: { slug: "welcome" } })
        assert.strictEqual(template.status, 404)
        assert.strictEqual(template.code, "TEMPLATE_NOT_FOUND")
        const unknownChannel = yield* send({ to: TO, text: { body: "x" }, channel_id: UNKNOWN_CHANNEL })
        assert.strictEqual(unknownChannel.status, 404)
        assert.strictEqual(unknownChannel.code, "CHANNEL_NOT_FOUND")
        const live = yield* createKey(user, { mode: "live" })
        const liveSend = yield* send({ to: TO, text: { body: "x" } }, yield* api(live.secret))
        assert.strictEqual(liveSend.status, 403)
        assert.strictEqual(liveSend.code, "SANDBOX_TEST_KEY_REQUIRED")
        const list = yield* client.messages.list({ urlParams: {} })
        assert.strictEqual(list.data.length, 0)
      }))

    it.effect("refuses a send whose type the channel's provider does not take, with message_type_unsupported", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const sql = yield* SqlClient.SqlClient
        // a provider whose capability snapshot lacks text (a media-only or read-only link)
        yield* sql`UPDATE channels SET capabilities = '{"max_throughput_mps": 2, "message_types": ["image"]}'::jsonb
          WHERE id = ${session.channel_id}`
        const client = yield* api(key)
        const refusal = yield* refused(client.messages.send({ payload: { to: TO, text: { body: "hi" } }, headers: {} }))
        assert.strictEqual(refusal.status, 409)
        assert.strictEqual(refusal.code, "CHANNEL_CAPABILITY_UNAVAILABLE")
        assert.strictEqual(refusal.details["reason"], "message_type_unsupported")
        assert.strictEqual(refusal.details["type"], "text")
        const none = yield* sql<
          { n: number }
        >`SELECT count(*)::int AS n FROM messages WHERE channel_id = ${session.channel_id}`
        assert.strictEqual(none[0]!.n, 0)
      }))

    it.effect("asks for a channel when the workspace has none", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const key = yield* createKey(user, { mode: "test" })
        const client = yield* api(key.secret)
        const reply = yield* refused(client.messages.send({ payload: { to: TO, text: { body: "x" } }, headers: {} }))
        assert.strictEqual(reply.status, 422)
        assert.strictEqual(reply.details["reason"], "channel_required")
      }))

    it.effect("lists newest first with filters, and refuses unknown filter values", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const client = yield* api(key)
        const a = yield* client.messages.send({
          payload: { to: TO, text: { body: "a" }, category: "marketing" },
          headers: {}
        })
        const b = yield* client.messages.send({ payload: { to: TO, text: { body: "b" } }, headers: {} })
        const all = yield* client.messages.list({ urlParams: {} })
        assert.deepStrictEqual(all.data.map((m) => m.id), [b.id, a.id])
        const marketing = yield* client.messages.list({ urlParams: { category: "marketing" } })
        assert.deepStrictEqual(marketing.data.map((m) => m.id), [a.id])
        const byChannel = yield* client.messages.list({
          urlParams: { channel_id: session.channel_id, direction: "outbound" }
        })
        assert.strictEqual(byChannel.data.length, 2)
        // raw: unknown filter values are malformed input the typed client would not send
        const bad = yield* request("GET", "/v1/messages?status=teleported", { token: key })
        assert.strictEqual(bad.status, 422)
        assert.deepStrictEqual(envelopeOf(bad).details.issues[0].path, ["status"])
        // raw: an unknown state filter value
        const badState = yield* request("GET", "/v1/messages?state=nope", { token: key })
        assert.strictEqual(badState.status, 422)
        const unknownChannel = yield* refused(client.messages.list({ urlParams: { channel_id: UNKNOWN_CHANNEL } }))
        assert.strictEqual(unknownChannel.status, 404)
        assert.strictEqual(unknownChannel.code, "CHANNEL_NOT_FOUND")
        const missing = yield* refused(client.messages.get({ path: { messageId: "msg_01JD7X6F3Q9T2M5N8R4V0W1Y2Z" } }))
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(missing.code, "NOT_FOUND")
        assert.strictEqual(missing.details["resource"], "message")
      }))

    it.effect("records an inbound sandbox message with message.received", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup()
        const client = yield* api(key)
        const [, reply] = yield* client.sandbox.inbound({
          path: { sessionId: session.id },
          payload: { from: TO, text: { body: "hi there" } },
          withResponse: true
        })
        assert.strictEqual(reply.status, 202)
        // the simulated network delivers it through the channel's entity, a moment later
        const inbound = yield* eventually(
          client.messages.list({ urlParams: { direction: "inbound" } }),
          (r) => r.data.length > 0
        )
        assert.strictEqual(inbound.data.length, 1)
        assert.strictEqual(inbound.data[0]!.status, "delivered")
        assert.strictEqual(inbound.data[0]!.from, TO)
        const sql = yield* SqlClient.SqlClient
        const events = yield* sql<
          { envelope: string }
        >`SELECT envelope FROM events WHERE type = 'message.received' AND object_id = ${inbound.data[0]!.id}`
        const data = JSON.parse(events[0]!.envelope).data
        assert.strictEqual(data.direction, "inbound")
        assert.strictEqual(data.channel_id, session.channel_id)
        assert.strictEqual(data.conversation_id, inbound.data[0]!.conversation_id)
      }))
  })
})
