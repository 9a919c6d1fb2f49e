/**
 * A reach-out timelock that starts while sends are queued, against the fake WhatsApp server (real
 * Baileys, offline): messages to new contacts already queued are held (neither sent nor failed)
 * until it ends, then go out in order; replies to contacts who wrote first go on
 * (docs/LIMITS.md, "Number protection").
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, eventually } from "./support/Fixtures.js"
import { appWith, channelOf, pairedChannel, Wa } from "./support/QrApp.js"

describe("QR reach-out timelock", () => {
  layer(appWith({ phoneNumber: "+15550006666" }), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped(
      "holds queued sends to new contacts while the timelock lasts (not sent, not failed), then sends them in order; replies go on",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { user, channelId } = yield* pairedChannel("Held")
          const client = yield* api(user.accessToken, user.workspaceId)
          const send = (to: string, text: string) =>
            Effect.map(
              client.messages.send({ payload: { channel_id: channelId, to, text: { body: text } }, headers: {} }),
              (sent) => sent.id
            )
          const message = (messageId: `msg_${string}`) => client.messages.get({ path: { messageId } })
          const regular = wa.contact("+4915188000001")
          yield* regular.says("Is my order ready?")
          yield* eventually(
            client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId } }),
            (page) => page.data.length > 0
          )
          const stranger = wa.contact("+4915188000002")
          // the channel sends one message per 2-3 s: the stranger's wait behind the replies
          for (const text of ["Yes,", "it is", "ready"]) yield* send(regular.number, text)
          const held = [yield* send(stranger.number, "first"), yield* send(stranger.number, "second")]
          wa.mexNotification("NotificationUserReachoutTimelockUpdate", {
            xwa2_notify_account_reachout_timelock: {
              is_active: true,
              time_enforcement_ends: String(Math.floor(Date.now() / 1000) + 3600),
              enforcement_type: "DEFAULT"
            }
          })
          yield* eventually(channelOf(user, channelId), (c) => c.status_reason === "reachout_timelocked")
          // replies go on, one accepted after the timelock began included
          yield* send(regular.number, "see you")
          yield* eventually(Effect.sync(() => regular.received.length), (n) => n === 4, 60_000)
          assert.deepStrictEqual(regular.received.map((m) => m.text), ["Yes,", "it is", "ready", "see you"])
          // the stranger's are held: well past their turn, still queued, nothing sent, nothing failed
          yield* Effect.sleep("4 seconds")
          assert.deepStrictEqual(stranger.received, [])
          assert.deepStrictEqual(stranger.chat, [], "no typing either")
          for (const id of held) {
            const m = yield* message(id)
            assert.strictEqual(m.status, "queued", JSON.stringify(m))
            assert.notInclude(m.timeline.map((t) => t.to_state), "dispatching")
          }
          // the channel's health says so: two held, the signal and when, the day's sends by recipient
          const safety = () => client.qrPairing.safety({ path: { channelId } })
          const locked = yield* safety()
          assert.strictEqual(locked.restrictions.held_by_timelock, 2)
          assert.strictEqual(locked.restrictions.last_signal?.signal, "reachout_timelocked")
          assert.isAtMost(Math.abs(Date.parse(locked.restrictions.last_signal?.at ?? "") - Date.now()), 60_000)
          assert.deepStrictEqual(locked.sends_24h, { new_contacts: 2, existing_contacts: 4 })
          assert.strictEqual(locked.sent_24h, 4)
          assert.strictEqual(locked.queued, 2)

          // WhatsApp lifts it: the held messages go, in the order they were accepted
          wa.mexNotification("NotificationUserReachoutTimelockUpdate", {
            xwa2_notify_account_reachout_timelock: { is_active: false }
          })
          yield* eventually(Effect.sync(() => stranger.received.length), (n) => n === 2, 60_000)
          assert.deepStrictEqual(stranger.received.map((m) => m.text), ["first", "second"])
          // (the check's answer is recorded as the link reports it, a moment after the send)
          const lifted = yield* eventually(safety(), (b) => b.recipient_checks_24h.on_whatsapp === 2)
          assert.strictEqual(lifted.restrictions.held_by_timelock, 0)
          assert.strictEqual(lifted.restrictions.last_signal?.signal, "restriction_lifted")
          // WhatsApp confirmed the stranger before the first of them went out
          assert.deepStrictEqual(lifted.recipient_checks_24h, { on_whatsapp: 2, not_on_whatsapp: 0 })
          for (const id of held) {
            const m = yield* eventually(message(id), (x) => x.status !== "queued" && x.status !== "dispatching")
            assert.oneOf(m.status, ["provider_accepted", "sent", "delivered", "read"])
          }
        }).pipe(Effect.orDie),
      { timeout: 180_000 }
    )
  })
})
