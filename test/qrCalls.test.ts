/**
 * Calls to a QR channel's number, end to end through the real Baileys client and the fake WhatsApp
 * server: a call becomes an inbound `call` message in the caller's conversation with
 * `message.received` (missed, answered on the phone with its duration), counted by outcome; with a
 * rejecting call policy (`PATCH /v1/channels/{id}`) the call is rejected at once and the caller
 * gets the policy's reply once, however often the offer repeats.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import type { Messaging } from "@switchboard/domain"
import { CallMetrics, InboundMetrics } from "@switchboard/providers"
import { Effect, Metric, MetricLabel } from "effect"
import { api, eventually, request, type SignedUp } from "./support/Fixtures.js"
import { appWith, as, channelOf, pairedChannel, Wa } from "./support/QrApp.js"

const calls = (outcome: string, kind: "voice" | "video") =>
  Effect.map(
    Metric.value(Metric.taggedWithLabels(CallMetrics.calls, [
      MetricLabel.make("outcome", outcome),
      MetricLabel.make("kind", kind)
    ])),
    (state) => state.count
  )

const duplicateCalls = Effect.map(
  Metric.value(Metric.taggedWithLabels(InboundMetrics.inboundMessages, [
    MetricLabel.make("type", "call"),
    MetricLabel.make("outcome", "ignored"),
    MetricLabel.make("reason", "duplicate")
  ])),
  (state) => state.count
)

const messagesUntil = (
  user: SignedUp,
  channelId: `ch_${string}`,
  direction: "inbound" | "outbound",
  done: (messages: ReadonlyArray<Messaging.Message>) => boolean
) =>
  Effect.flatMap(api(user.accessToken, user.workspaceId), (client) =>
    Effect.map(
      eventually(
        client.messages.list({ urlParams: { direction, channel_id: channelId, limit: 100 } }),
        (page) => done(page.data),
        30_000
      ),
      (page) => page.data
    ))

const receivedEvents = (messageId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ type: string }>`SELECT type FROM events WHERE object_id = ${messageId}`
  }).pipe(Effect.orDie)

describe("QR calls", () => {
  layer(appWith({ phoneNumber: "+15550007777" }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("records a missed video call in the caller's conversation, with message.received", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel()
        const before = yield* calls("missed", "video")
        const caller = wa.contact("+4915112340001")
        const call = caller.calls({ video: true })
        yield* call.offer
        yield* call.hangsUp
        const [message] = yield* messagesUntil(user, channelId, "inbound", (data) => data.length === 1)
        assert.strictEqual(message!.type, "call")
        assert.deepStrictEqual(message!.call, { video: true, status: "missed", duration_s: null })
        assert.strictEqual(message!.from, caller.number)
        assert.strictEqual(call.rejections, 0)
        assert.deepStrictEqual((yield* receivedEvents(message!.id)).map((e) => e.type), ["message.received"])
        assert.strictEqual((yield* calls("missed", "video")) - before, 1)
      }))

    it.scoped("records a call that names its caller by LID on the number's contact", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("LID calls")
        const caller = wa.contact("+4915112340004")
        const call = caller.calls({ byLid: true })
        yield* call.offer
        yield* call.timesOut
        const [message] = yield* messagesUntil(user, channelId, "inbound", (data) => data.length === 1)
        assert.deepStrictEqual(message!.call, { video: false, status: "missed", duration_s: null })
        assert.strictEqual(message!.from, caller.number)
        assert.deepStrictEqual(message!.sender, { phone_number: caller.number, whatsapp_lid: caller.lidUser })
      }))

    it.scoped("records a call answered on the phone as answered_elsewhere, with its duration", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Front desk")
        const call = wa.contact("+4915112340002").calls()
        const answeredAt = Date.now()
        yield* call.offer
        yield* call.answeredOnPhone(answeredAt)
        yield* call.endsAt(answeredAt + 42_000)
        const [message] = yield* messagesUntil(user, channelId, "inbound", (data) => data.length === 1)
        assert.deepStrictEqual(message!.call, { video: false, status: "answered_elsewhere", duration_s: 42 })
      }))

    it.scoped("rejects calls by policy at once and replies once, however often the offer repeats", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Sales")
        const policy = { reject: true, reply_text: "We can't take calls here; please write." }
        const patched = yield* request("PATCH", `/v1/channels/${channelId}`, {
          ...as(user),
          body: { call_policy: policy }
        })
        assert.strictEqual(patched.status, 200, patched.text)
        assert.deepStrictEqual((yield* channelOf(user, channelId)).call_policy, policy)

        const caller = wa.contact("+4915112340003")
        const call = caller.calls()
        const duplicates = yield* duplicateCalls
        yield* call.offer
        yield* call.rejected(1)
        const reply = yield* caller.nextReceived(0).pipe(Effect.timeout("30 seconds"))
        assert.strictEqual(reply.text, policy.reply_text)
        const [message] = yield* messagesUntil(user, channelId, "inbound", (data) => data.length === 1)
        assert.deepStrictEqual(message!.call, { video: false, status: "rejected", duration_s: null })

        // WhatsApp offers the same call again: rejected again, not answered again
        yield* call.offer
        yield* call.rejected(2)
        yield* eventually(duplicateCalls, (n) => n > duplicates)
        const outbound = yield* messagesUntil(user, channelId, "outbound", () => true)
        assert.deepStrictEqual(outbound.map((m) => m.text.body), [policy.reply_text])
        assert.strictEqual(outbound[0]!.conversation_id, message!.conversation_id)
        assert.strictEqual(caller.received.length, 1)
      }))

    it.scoped("refuses a call policy that is not exactly {reject, reply_text}", () =>
      Effect.gen(function*() {
        const { channelId, user } = yield* pairedChannel("Policy")
        for (
          const body of [
            { call_policy: { reject: true } },
            { call_policy: { reject: "yes", reply_text: null } },
            { call_policy: { reject: true, reply_text: "" } },
            { call_policy: { reject: true, reply_text: "  \n " } },
            { call_policy: { reject: true, reply_text: null, ring: 3 } }
          ]
        ) {
          const refused = yield* request("PATCH", `/v1/channels/${channelId}`, { ...as(user), body })
          assert.strictEqual(refused.status, 422, JSON.stringify(body))
        }
        assert.deepStrictEqual((yield* channelOf(user, channelId)).call_policy, { reject: false, reply_text: null })
      }))
  })
})
