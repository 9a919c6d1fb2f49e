/**
 * Number protection on QR channels against the fake WhatsApp server (real Baileys, offline):
 * WhatsApp's refusals and restriction signals end the message and show on the channel
 * (docs/LIMITS.md, "Number protection").
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { eventually, request } from "./support/Fixtures.js"
import { appWith, as, channelEvents, channelOf, pairedChannel, Wa } from "./support/QrApp.js"

describe("QR number protection", () => {
  layer(appWith({ phoneNumber: "+15550008888" }), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped(
      "fails a message WhatsApp refuses with 463 (message.failed, account_restricted) and shows the restriction on the channel",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { user, channelId } = yield* pairedChannel("Restricted")
          const stranger = wa.contact("+4915122220001")
          stranger.ackError = "463"
          const sent = yield* request("POST", "/v1/messages", {
            ...as(user),
            body: { channel_id: channelId, to: stranger.number, text: { body: "hello there" } }
          })
          assert.strictEqual(sent.status, 201, sent.text)
          const failed = yield* eventually(
            Effect.map(request("GET", `/v1/messages/${sent.body.id}`, as(user)), (r) => r.body),
            (m) => m.status === "failed_permanent",
            30_000
          )
          assert.strictEqual(failed.status, "failed_permanent", JSON.stringify(failed))
          assert.strictEqual(failed.failure.class, "permanent")
          assert.strictEqual(failed.failure.code, "account_restricted")
          assert.include(failed.failure.reason, "463")
          assert.deepStrictEqual(stranger.refused, [sent.body.id])
          assert.deepStrictEqual(stranger.received, [], "WhatsApp delivered nothing")
          const steps = failed.timeline.map((t: { to_state: string }) => t.to_state)
          // the refusal may come before or after the dispatcher recorded `provider_accepted`
          assert.strictEqual(steps[steps.length - 1], "failed_permanent")

          const events = yield* channelEvents(sent.body.id)
          const failedEvent = events.find((e) => e.type === "message.failed")
          assert.isDefined(failedEvent, JSON.stringify(events))
          assert.strictEqual(failedEvent!.data.error_code, "account_restricted")

          // the number still sends to conversations WhatsApp allows: the channel stays connected,
          // its reason says what happened
          const channel = yield* eventually(channelOf(user, channelId), (c) => c.status_reason === "account_restricted")
          assert.strictEqual(channel.status, "connected")
          assert.strictEqual(channel.status_reason, "account_restricted")
        })
    )

    it.scoped("fails a message WhatsApp never acknowledges after 15 minutes (provider_ack_timeout), never leaving it pending", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const sql = yield* SqlClient.SqlClient
        const { user, channelId } = yield* pairedChannel("Unanswered")
        const silent = wa.contact("+4915122220002")
        silent.silent = true
        const sent = yield* request("POST", "/v1/messages", {
          ...as(user),
          body: { channel_id: channelId, to: silent.number, text: { body: "anyone there?" } }
        })
        assert.strictEqual(sent.status, 201, sent.text)
        const message = (id: string) => Effect.map(request("GET", `/v1/messages/${id}`, as(user)), (r) => r.body)
        const accepted = yield* eventually(message(sent.body.id), (m) => m.status === "provider_accepted", 30_000)
        assert.strictEqual(accepted.status, "provider_accepted")
        // 14 minutes without an answer: still waited for
        yield* sql`UPDATE messages SET updated_at = now() - interval '14 minutes' WHERE id = ${sent.body.id}`
        yield* Effect.sleep("2500 millis")
        assert.strictEqual((yield* message(sent.body.id)).status, "provider_accepted")
        // past the bound: the sweep decides
        yield* sql`UPDATE messages SET updated_at = now() - interval '16 minutes' WHERE id = ${sent.body.id}`
        const failed = yield* eventually(message(sent.body.id), (m) => m.status === "failed_permanent", 30_000)
        assert.strictEqual(failed.status, "failed_permanent", JSON.stringify(failed))
        assert.strictEqual(failed.failure.code, "provider_ack_timeout")
        const events = yield* channelEvents(sent.body.id)
        assert.include(events.map((e) => e.type), "message.failed")
      }).pipe(Effect.orDie))
  })
})
