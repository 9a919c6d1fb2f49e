import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { verifyWebhook } from "@switchboard/sdk"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { createHmac } from "node:crypto"
import { api, createKey, refused, request, sandboxSetup, signUp } from "./support/Fixtures.js"
import { eventually, receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"

const webhookKey = (user: Parameters<typeof createKey>[0]) => createKey(user, { scopes: ["webhooks.manage"] })

/** A receiver, a signed-up user with a webhooks key, and an endpoint of theirs pointing at it. */
const endpointSetup = (eventTypes: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sink = yield* receiver()
    const user = yield* signUp()
    const admin = yield* webhookKey(user)
    const endpoint = yield* (yield* api(admin.secret)).webhooks.create({
      payload: { url: sink.url, event_types: eventTypes }
    })
    return { sink, user, admin, endpoint }
  })

describe("webhook delivery (loopback receivers allowed for tests)", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("delivers signed events of a send, verifiable by the SDK, with the documented headers", () =>
      Effect.gen(function*() {
        const sink = yield* receiver()
        const { key, user } = yield* sandboxSetup()
        const admin = yield* webhookKey(user)
        const client = yield* api(admin.secret)
        // the typed client decodes the declared 201 only
        const created = yield* client.webhooks.create({
          payload: {
            url: `${sink.url}/hooks`,
            event_types: ["message.queued", "message.delivered"],
            description: "main"
          }
        })
        assert.match(created.secret, /^whsec_/)
        assert.strictEqual(created.secret_last4, created.secret.slice(-4))
        // raw: the test is about what the body leaves out, which a decoded endpoint would hide
        const fetched = yield* request("GET", `/v1/webhook-endpoints/${created.id}`, { token: admin.secret })
        assert.strictEqual(fetched.status, 200)
        assert.strictEqual(fetched.body.id, created.id)
        assert.isUndefined(fetched.body.secret)
        assert.notInclude(fetched.text, created.secret)
        const sent = yield* (yield* api(key)).messages.send({ payload: { to: TO, text: { body: "hi" } }, headers: {} })
        yield* eventually(() => sink.received.length >= 2 || undefined)
        const types = sink.received.map((r) => r.headers["x-webhook-event"]).sort()
        assert.deepStrictEqual(types, ["message.delivered", "message.queued"])
        for (const r of sink.received) {
          const verified = verifyWebhook(r.body, r.headers as any, created.secret)
          assert.isTrue(verified.valid, JSON.stringify(verified))
          // and independently of the SDK, with node:crypto
          const expected = createHmac("sha256", created.secret)
            .update(`${r.headers["x-webhook-timestamp"]}.${r.body}`)
            .digest("hex")
          assert.strictEqual(r.headers["x-webhook-signature"], `v1=${expected}`)
          assert.isAtMost(Math.abs(Number(r.headers["x-webhook-timestamp"]) - Date.now() / 1000), 60)
          const envelope = JSON.parse(r.body)
          assert.strictEqual(r.headers["x-webhook-event-id"], envelope.id)
          assert.match(r.headers["x-webhook-delivery-id"] as string, /^whd_/)
          assert.strictEqual(r.headers["x-webhook-attempt"], "1")
          assert.strictEqual(envelope.data.message_id, sent.id)
          assert.strictEqual(r.path, "/hooks")
        }
        const sql = yield* SqlClient.SqlClient
        const stored = yield* sql<
          { envelope: string }
        >`SELECT envelope FROM events WHERE type = 'message.queued' AND object_id = ${sent.id}`
        assert.strictEqual(
          sink.received.find((r) => r.headers["x-webhook-event"] === "message.queued")!.body,
          stored[0]!.envelope
        )
        // the receiver answers before the outcome is recorded: wait for both records
        const deliveries = yield* eventuallyEffect(Effect.map(
          client.webhooks.endpointDeliveries({ path: { endpointId: created.id }, urlParams: { status: "succeeded" } }),
          (page) => page.data.length === 2 ? page : undefined
        ))
        assert.strictEqual(deliveries.data.length, 2)
        assert.strictEqual(deliveries.data[0]!.attempts[0]!.failure_reason, "ok")
        assert.strictEqual(deliveries.data[0]!.attempts[0]!.response_status, 200)
      }))

    it.scoped("retries a 500 and succeeds; a 4xx fails without retry; a redirect is not followed", () =>
      Effect.gen(function*() {
        let flakyCalls = 0
        let limitedCalls = 0
        const sink = yield* receiver((r) =>
          r.path === "/flaky" ?
            { status: flakyCalls++ < 2 ? 500 : 200 } :
            r.path === "/gone" ?
            { status: 404 } :
            r.path === "/moved" ?
            { status: 302, headers: { location: "/elsewhere" } } :
            r.path === "/moved301" ?
            { status: 301, headers: { location: "/elsewhere" } } :
            r.path === "/limited" ?
            { status: limitedCalls++ < 1 ? 429 : 200 } :
            { status: 200 }
        )
        const user = yield* signUp()
        const admin = yield* webhookKey(user)
        yield* Effect.flatMap(Operator.Operator, (o) => o.setPlan(user.workspaceId, "growth")).pipe(
          Effect.provide(TestApp.operatorLayer)
        )
        const client = yield* api(admin.secret)
        const make = (path: string) =>
          Effect.map(
            client.webhooks.create({ payload: { url: `${sink.url}${path}`, event_types: ["*"] } }),
            (endpoint) => endpoint.id
          )
        const flaky = yield* make("/flaky")
        const gone = yield* make("/gone")
        const moved = yield* make("/moved")
        // the typed client decodes the declared 202 only
        const test = (endpointId: `wh_${string}`) => client.webhooks.test({ path: { endpointId }, payload: {} })
        const flakyTest = yield* test(flaky)
        const goneTest = yield* test(gone)
        const movedTest = yield* test(moved)
        const flakyDone = yield* waitDelivery(admin.secret, flakyTest.delivery_id, "succeeded")
        assert.strictEqual(flakyDone.attempt_count, 3)
        assert.deepStrictEqual(flakyDone.attempts.map((a) => a.failure_reason), [
          "server_error",
          "server_error",
          "ok"
        ])
        const goneDone = yield* waitDelivery(admin.secret, goneTest.delivery_id, "failed")
        assert.strictEqual(goneDone.attempt_count, 1)
        assert.strictEqual(goneDone.failure_reason, "client_error")
        const movedDone = yield* waitDelivery(admin.secret, movedTest.delivery_id, "failed")
        assert.strictEqual(movedDone.failure_reason, "redirect")
        const moved301 = yield* make("/moved301")
        const limited = yield* make("/limited")
        const moved301Done = yield* waitDelivery(admin.secret, (yield* test(moved301)).delivery_id, "failed")
        assert.strictEqual(moved301Done.failure_reason, "redirect")
        assert.strictEqual(moved301Done.attempt_count, 1)
        const limitedDone = yield* waitDelivery(admin.secret, (yield* test(limited)).delivery_id, "succeeded")
        assert.deepStrictEqual(limitedDone.attempts.map((a) => a.failure_reason), ["rate_limited", "ok"])
        assert.deepStrictEqual(limitedDone.attempts.map((a) => a.attempt), [1, 2])
        assert.isFalse(sink.received.some((r) => r.path === "/elsewhere"))
        const testEnvelope = JSON.parse(sink.received.find((r) => r.path === "/gone")!.body)
        assert.isTrue(testEnvelope.is_test)
      }))

    it.scoped("replays a failed delivery byte for byte with the same event id", () =>
      Effect.gen(function*() {
        const sink = yield* receiver((_r, i) => ({ status: i === 0 ? 400 : 200 }))
        const user = yield* signUp()
        const admin = yield* webhookKey(user)
        const client = yield* api(admin.secret)
        const endpoint = yield* client.webhooks.create({ payload: { url: sink.url, event_types: ["*"] } })
        const test = yield* client.webhooks.test({
          path: { endpointId: endpoint.id },
          payload: { event_type: "channel.created" }
        })
        yield* waitDelivery(admin.secret, test.delivery_id, "failed")
        // the typed client decodes the declared 202 only
        const early = yield* client.webhooks.replay({ path: { deliveryId: test.delivery_id } })
        assert.strictEqual(early.event_id, test.event_id)
        assert.notStrictEqual(early.delivery_id, test.delivery_id)
        const replayed = yield* waitDelivery(admin.secret, early.delivery_id, "succeeded")
        assert.strictEqual(replayed.replay_of, test.delivery_id)
        assert.strictEqual(sink.received[0]!.body, sink.received[1]!.body)
        assert.strictEqual(sink.received[1]!.headers["x-webhook-event-id"], test.event_id)
        const original = yield* client.webhooks.delivery({ path: { deliveryId: test.delivery_id } })
        assert.strictEqual(original.replay_count, 1)
        const again = yield* refused(client.webhooks.replay({ path: { deliveryId: early.delivery_id } }))
        assert.strictEqual(again.status, 409)
      }))

    it.scoped("holds deliveries while paused and sends them when resumed", () =>
      Effect.gen(function*() {
        const { admin, endpoint, sink } = yield* endpointSetup(["*"])
        const client = yield* api(admin.secret)
        const path = { endpointId: endpoint.id }
        const paused = yield* client.webhooks.update({ path, payload: { status: "paused" } })
        assert.strictEqual(paused.status, "paused")
        // raw: "disabled" is a status the contract does not take, which the typed client would not send
        const disabled = yield* request("PATCH", `/v1/webhook-endpoints/${endpoint.id}`, {
          token: admin.secret,
          body: { status: "disabled" }
        })
        assert.strictEqual(disabled.status, 422)
        const test = yield* client.webhooks.test({ path, payload: {} })
        yield* Effect.sleep("2500 millis")
        assert.strictEqual(sink.received.length, 0)
        const pending = yield* client.webhooks.delivery({ path: { deliveryId: test.delivery_id } })
        assert.strictEqual(pending.status, "pending")
        yield* client.webhooks.update({ path, payload: { status: "active" } })
        yield* waitDelivery(admin.secret, test.delivery_id, "succeeded")
        assert.strictEqual(sink.received.length, 1)
      }))

    it.scoped("disables an endpoint after 20 consecutive failed attempts; reactivation clears the counter", () =>
      Effect.gen(function*() {
        const sink = yield* receiver(() => ({ status: 503 }))
        const user = yield* signUp()
        const admin = yield* webhookKey(user)
        const client = yield* api(admin.secret)
        const endpoint = yield* client.webhooks.create({ payload: { url: sink.url, event_types: ["*"] } })
        const path = { endpointId: endpoint.id }
        const ids: Array<`whd_${string}`> = []
        for (let i = 0; i < 4; i++) {
          ids.push((yield* client.webhooks.test({ path, payload: {} })).delivery_id)
        }
        const disabled = yield* eventuallyEffect(
          Effect.map(
            client.webhooks.get({ path }),
            (e) => e.status === "disabled" ? e : undefined
          )
        )
        assert.strictEqual(disabled.consecutive_failures, 20)
        // the attempts after the 20th are not made: deliveries still pending end not_deliverable
        const final = yield* Effect.forEach(ids, (id) => waitDelivery(admin.secret, id, ["dead", "failed"]))
        assert.isTrue(
          final.some((d) => d.failure_reason === "not_deliverable"),
          JSON.stringify(final.map((d) => d.failure_reason))
        )
        // at most the 3 other attempts already in flight (4 per endpoint) can follow the 20th
        assert.isAtLeast(sink.received.length, 20)
        assert.isAtMost(sink.received.length, 23)
        const reactivated = yield* client.webhooks.update({ path, payload: { status: "active" } })
        assert.strictEqual(reactivated.status, "active")
        assert.strictEqual(reactivated.consecutive_failures, 0)
      }))

    it.scoped("refuses to pause a disabled endpoint (409, nothing changed); only active clears it", () =>
      Effect.gen(function*() {
        const { admin, endpoint } = yield* endpointSetup(["message.failed"])
        // 20 failures in a row, as the delivering entity records them
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE webhook_endpoints SET status = 'disabled', consecutive_failures = 20
          WHERE id = ${endpoint.id}`
        const client = yield* api(admin.secret)
        const path = { endpointId: endpoint.id }
        const paused = yield* refused(
          client.webhooks.update({ path, payload: { status: "paused", description: "changed" } })
        )
        assert.strictEqual(paused.status, 409)
        assert.strictEqual(paused.code, "CONFLICT")
        assert.strictEqual(paused.details.reason, "invalid_status_transition")
        const unchanged = yield* client.webhooks.get({ path })
        assert.strictEqual(unchanged.status, "disabled")
        assert.strictEqual(unchanged.consecutive_failures, 20)
        assert.notStrictEqual(unchanged.description, "changed")
        const active = yield* client.webhooks.update({ path, payload: { status: "active" } })
        assert.strictEqual(active.consecutive_failures, 0)
        const pausedNow = yield* client.webhooks.update({ path, payload: { status: "paused" } })
        assert.strictEqual(pausedNow.status, "paused")
      }))

    it.scoped("signs with both secrets for 24 h after a rotation, the new one first", () =>
      Effect.gen(function*() {
        const sink = yield* receiver()
        const user = yield* signUp()
        const admin = yield* webhookKey(user)
        const client = yield* api(admin.secret)
        const endpoint = yield* client.webhooks.create({ payload: { url: sink.url, event_types: ["*"] } })
        const path = { endpointId: endpoint.id }
        const rotated = yield* client.webhooks.rotateSecret({ path })
        assert.notStrictEqual(rotated.secret, endpoint.secret)
        assert.strictEqual(
          Date.parse(rotated.previous_secret_expires_at!) - Date.parse(rotated.secret_rotated_at!),
          24 * 3600 * 1000
        )
        const test = yield* client.webhooks.test({ path, payload: {} })
        yield* waitDelivery(admin.secret, test.delivery_id, "succeeded")
        const header = sink.received[0]!.headers["x-webhook-signature"] as string
        assert.strictEqual(header.split(",").length, 2)
        const newOnly = verifyWebhook(
          sink.received[0]!.body,
          { ...sink.received[0]!.headers, "x-webhook-signature": header.split(",")[0] } as any,
          rotated.secret
        )
        assert.isTrue(newOnly.valid)
        assert.isTrue(
          verifyWebhook(sink.received[0]!.body, sink.received[0]!.headers as any, endpoint.secret).valid
        )
        // once the 24 h overlap is over (moved into the past here), only the new secret signs
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = ${endpoint.id}`
        const later = yield* client.webhooks.test({ path, payload: {} })
        yield* waitDelivery(admin.secret, later.delivery_id, "succeeded")
        const single = sink.received[1]!.headers["x-webhook-signature"] as string
        assert.strictEqual(single.split(",").length, 1)
        assert.isTrue(
          verifyWebhook(sink.received[1]!.body, sink.received[1]!.headers as any, rotated.secret).valid
        )
        assert.isFalse(
          verifyWebhook(sink.received[1]!.body, sink.received[1]!.headers as any, endpoint.secret).valid
        )
      }))

    it.scoped("retries an attempt that gets no answer within 10 s", () =>
      Effect.gen(function*() {
        let calls = 0
        // the first answer comes long after the 10 s attempt timeout (11 s left a loaded machine's
        // timer 1 s to fire in; docs/TESTING.md "Timing bounds")
        const sink = yield* receiver(() => ({ status: 200, delayMs: calls++ === 0 ? 60_000 : 0 }))
        const user = yield* signUp()
        const admin = yield* webhookKey(user)
        const client = yield* api(admin.secret)
        const endpoint = yield* client.webhooks.create({ payload: { url: sink.url, event_types: ["*"] } })
        const test = yield* client.webhooks.test({ path: { endpointId: endpoint.id }, payload: {} })
        const done = yield* waitDelivery(admin.secret, test.delivery_id, "succeeded")
        assert.deepStrictEqual(done.attempts.map((a) => a.failure_reason), ["timeout", "ok"])
        assert.strictEqual(
          sink.received[0]!.headers["x-webhook-event-id"],
          sink.received[1]!.headers["x-webhook-event-id"]
        )
        assert.strictEqual(sink.received[1]!.headers["x-webhook-attempt"], "2")
      }))

    it.scoped("validates endpoints: unknown event type, wrong status value, plan limit; lists the catalogue", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const admin = yield* webhookKey(user)
        const client = yield* api(admin.secret)
        const catalogue = yield* client.webhooks.eventTypes({ urlParams: { limit: 100 } })
        assert.strictEqual(catalogue.data.length, 31)
        assert.isFalse(catalogue.data.find((e) => e.type === "campaign.started")!.emitted)
        // the contract takes any string as an event type: the server judges it
        const unknown = yield* refused(
          client.webhooks.create({ payload: { url: "http://127.0.0.1/x", event_types: ["message.exploded"] } })
        )
        assert.strictEqual(unknown.status, 422)
        assert.isUndefined(unknown.details.sent)
        assert.strictEqual(unknown.details.reason, "unknown_event_type")
        assert.deepStrictEqual(unknown.details.issues[0].path, ["event_types", 0])
        assert.notInclude(JSON.stringify(unknown), "message.exploded")
        const ok = yield* client.webhooks.create({ payload: { url: "http://127.0.0.1/x", event_types: ["*"] } })
        const path = { endpointId: ok.id }
        const badPatch = yield* refused(
          client.webhooks.update({ path, payload: { event_types: ["message.sent", "message.exploded"] } })
        )
        assert.strictEqual(badPatch.status, 422)
        assert.strictEqual(badPatch.details.reason, "unknown_event_type")
        assert.deepStrictEqual(badPatch.details.issues[0].path, ["event_types", 1])
        const second = yield* refused(
          client.webhooks.create({ payload: { url: "http://127.0.0.1/y", event_types: ["*"] } })
        )
        assert.strictEqual(second.status, 409)
        assert.strictEqual(second.details.entitlement, "webhook_endpoints")
        const deleted = yield* client.webhooks.delete({ path })
        assert.deepStrictEqual({ ...deleted }, { id: ok.id, object: "webhook_endpoint", deleted: true })
        const gone = yield* refused(client.webhooks.get({ path }))
        assert.strictEqual(gone.status, 404)
        const noScope = yield* createKey(user)
        const withoutScope = yield* refused((yield* api(noScope.secret)).webhooks.list({ urlParams: {} }))
        assert.strictEqual(withoutScope.status, 403)
        assert.deepStrictEqual(withoutScope.details.required_scopes, ["webhooks.manage"])
      }))
  })
})

describe("webhook URL policy with the default configuration", () => {
  layer(TestApp.layer({}, { webhooks: { allowPrivateTargets: false } }), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.scoped("refuses loopback, private and metadata targets and other ports with details.reason", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const client = yield* api((yield* webhookKey(user)).secret)
        for (
          const [url, reason] of [
            ["http://127.0.0.1/hook", "private_address"],
            ["http://localhost/hook", "private_address"],
            ["http://169.254.169.254/latest/meta-data", "private_address"],
            ["http://[::1]/hook", "private_address"],
            ["http://[::ffff:10.0.0.1]/hook", "private_address"],
            ["https://example.com:8443/hook", "port_not_allowed"],
            ["https://user:pw@example.com/hook", "credentials_in_url"],
            ["ftp://example.com/hook", "unsupported_scheme"]
          ] as const
        ) {
          const reply = yield* refused(client.webhooks.create({ payload: { url, event_types: ["*"] } }))
          assert.strictEqual(reply.status, 422, url)
          assert.strictEqual(reply.details.reason, reason, url)
          // never the URL back; for a local receiver, what to set in development
          assert.notInclude(JSON.stringify(reply), url)
          if (reason === "private_address") {
            assert.include(reply.message, "WEBHOOK_ALLOW_PRIVATE_TARGETS=true")
          }
        }
      }))
  })
})

const waitDelivery = (token: string, deliveryId: `whd_${string}`, status: string | ReadonlyArray<string>) =>
  eventuallyEffect(
    Effect.map(
      Effect.flatMap(api(token), (client) => client.webhooks.delivery({ path: { deliveryId } })),
      (d) => (typeof status === "string" ? [status] : status).includes(d.status) ? d : undefined
    )
  )

const eventuallyEffect = <A, E, R>(check: Effect.Effect<A | undefined, E, R>, timeoutMs = 30_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const value = yield* check
      if (value !== undefined) return value
      yield* Effect.sleep("100 millis")
    }
    return yield* Effect.dieMessage("condition not met in time")
  })

// DNS rebinding: the name resolves to a public address when the endpoint is created and to
// loopback when the delivery is made; the delivery must be refused (blocked_target).
let rebinding = "93.184.216.34"

describe("webhook URL policy at delivery time", () => {
  layer(
    TestApp.layer({}, {
      webhooks: {
        allowPrivateTargets: false,
        resolver: async (host) => host === "hooks.rebind.test" ? [{ address: rebinding, family: 4 }] : []
      }
    }),
    { excludeTestServices: true, timeout: 120_000 }
  )((it) => {
    it.effect("blocks a host that resolved publicly at creation but to loopback at delivery", () =>
      Effect.gen(function*() {
        const user = yield* signUp()
        const admin = yield* webhookKey(user)
        const client = yield* api(admin.secret)
        // the typed client decodes the declared 201 only
        const endpoint = yield* client.webhooks.create({
          payload: { url: "http://hooks.rebind.test/hook", event_types: ["*"] }
        })
        rebinding = "127.0.0.1"
        const test = yield* client.webhooks.test({ path: { endpointId: endpoint.id }, payload: {} })
        const done = yield* waitDelivery(admin.secret, test.delivery_id, "failed")
        assert.strictEqual(done.failure_reason, "blocked_target")
        assert.strictEqual(done.attempt_count, 1)
      }))
  })
})
