/**
 * Number protection on QR channels against the fake WhatsApp server (real Baileys, offline):
 * WhatsApp's refusals and restriction signals end the message and show on the channel
 * (docs/LIMITS.md, "Number protection").
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { DatabaseConfig } from "@switchboard/db"
import { MetricsServer } from "@switchboard/infra"
import { Operator } from "@switchboard/service-api"
import { Effect, Option, Redacted } from "effect"
import { api, envelopeOf, eventually, refused, request, type SignedUp } from "./support/Fixtures.js"
import { adminRun } from "./support/Processes.js"
import { parse, total } from "./support/PrometheusParser.js"
import { appWith, as, channelEvents, channelOf, pairedChannel, Wa } from "./support/QrApp.js"
import * as TestApp from "./support/TestApp.js"

/**
 * `qr-warm-up` as the operator runs it: the spawned CLI in real mode; in embedded mode (the test
 * database lives in this process) the same `Operator.qrWarmUp` use-case the CLI calls.
 */
const qrWarmUp = (workspaceId: string, channelId: string, setting: "off" | "default" | { max: number }) =>
  Effect.gen(function*() {
    const url = (yield* DatabaseConfig.DatabaseConfig).url
    if (Option.isSome(url)) {
      const flag = setting === "off"
        ? ["--off"]
        : setting === "default"
        ? ["--default"]
        : ["--max", String(setting.max)]
      const run = yield* Effect.promise(() =>
        adminRun(["qr-warm-up", "--workspace", workspaceId, "--channel", channelId, ...flag], {
          DATABASE_URL: Redacted.value(url.value)
        })
      )
      assert.strictEqual(run.code, 0, run.err)
      return JSON.parse(run.out.trim().split("\n").pop()!)
    }
    return yield* Effect.flatMap(Operator.Operator, (o) => o.qrWarmUp(workspaceId, channelId, setting)).pipe(
      Effect.provide(TestApp.operatorLayer),
      Effect.orDie
    )
  })

/** What `/metrics` would answer, parsed strictly. */
const scrape = Effect.map(MetricsServer.scrape, parse)

const newContact = (i: number) => `+4915133${String(300_000 + i).padStart(6, "0")}`

/** The typed client as `user`, with the sends and reads every test here makes. */
const clientFor = (user: SignedUp, channelId: `ch_${string}`) =>
  Effect.map(api(user.accessToken, user.workspaceId), (client) => ({
    client,
    send: (to: string, body = "Hi") =>
      client.messages.send({ payload: { channel_id: channelId, to, text: { body } }, headers: {} }),
    message: (messageId: `msg_${string}`) => client.messages.get({ path: { messageId } }),
    safety: () => client.qrPairing.safety({ path: { channelId } }),
    inbound: () => client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId } })
  }))

describe("QR number protection", () => {
  layer(appWith({ phoneNumber: "+15550008888" }), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.scoped(
      "fails a message WhatsApp refuses with 463 (message.failed, account_restricted) and shows the restriction on the channel",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { user, channelId } = yield* pairedChannel("Restricted")
          const { message, safety, send } = yield* clientFor(user, channelId)
          const stranger = wa.contact("+4915122220001")
          stranger.ackError = "463"
          // the typed client decodes the declared 201 only
          const sent = yield* send(stranger.number, "hello there")
          const failed = yield* eventually(message(sent.id), (m) => m.status === "failed_permanent", 30_000)
          assert.strictEqual(failed.status, "failed_permanent", JSON.stringify(failed))
          assert.strictEqual(failed.failure?.class, "permanent")
          assert.strictEqual(failed.failure?.code, "account_restricted")
          assert.include(failed.failure!.reason, "463")
          assert.deepStrictEqual(stranger.refused, [sent.id])
          assert.deepStrictEqual(stranger.received, [], "WhatsApp delivered nothing")
          const steps = failed.timeline.map((t) => t.to_state)
          // the refusal may come before or after the dispatcher recorded `provider_accepted`
          assert.strictEqual(steps[steps.length - 1], "failed_permanent")

          const events = yield* channelEvents(sent.id)
          const failedEvent = events.find((e) => e.type === "message.failed")
          assert.isDefined(failedEvent, JSON.stringify(events))
          assert.strictEqual(failedEvent!.data.error_code, "account_restricted")

          // the number still sends to conversations WhatsApp allows: the channel stays connected,
          // its reason says what happened
          const channel = yield* eventually(channelOf(user, channelId), (c) => c.status_reason === "account_restricted")
          assert.strictEqual(channel.status, "connected")
          assert.strictEqual(channel.status_reason, "account_restricted")
          // visible in /metrics, without a series per channel
          const text = yield* MetricsServer.scrape
          const metrics = parse(text)
          assert.isAtLeast(total(metrics, "switchboard_qr_refused_messages_total", { code: "account_restricted" }), 1)
          assert.isAtLeast(
            total(metrics, "switchboard_qr_restriction_signals_total", { signal: "account_restricted" }),
            1
          )
          assert.notInclude(text, channelId)
          // and in the channel's health: the last signal with its time
          const signal = (yield* safety()).restrictions.last_signal
          assert.strictEqual(signal?.signal, "account_restricted")
          assert.isAtMost(Math.abs(Date.parse(signal!.at) - Date.now()), 60_000)
        })
    )

    it.scoped("fails a message WhatsApp never acknowledges after 15 minutes (provider_ack_timeout), never leaving it pending", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const sql = yield* SqlClient.SqlClient
        const { user, channelId } = yield* pairedChannel("Unanswered")
        const { message, send } = yield* clientFor(user, channelId)
        const silent = wa.contact("+4915122220002")
        silent.silent = true
        const sent = yield* send(silent.number, "anyone there?")
        const accepted = yield* eventually(message(sent.id), (m) => m.status === "provider_accepted", 30_000)
        assert.strictEqual(accepted.status, "provider_accepted")
        // 14 minutes without an answer: still waited for
        yield* sql`UPDATE messages SET updated_at = now() - interval '14 minutes' WHERE id = ${sent.id}`
        yield* Effect.sleep("2500 millis")
        assert.strictEqual((yield* message(sent.id)).status, "provider_accepted")
        // past the bound: the sweep decides
        yield* sql`UPDATE messages SET updated_at = now() - interval '16 minutes' WHERE id = ${sent.id}`
        const failed = yield* eventually(message(sent.id), (m) => m.status === "failed_permanent", 30_000)
        assert.strictEqual(failed.status, "failed_permanent", JSON.stringify(failed))
        assert.strictEqual(failed.failure?.code, "provider_ack_timeout")
        const events = yield* channelEvents(sent.id)
        assert.include(events.map((e) => e.type), "message.failed")
      }).pipe(Effect.orDie))

    it.scoped(
      "warms a new number up: 20 new contacts on day 1, then 429 warm_up with retry_at at day 2; replies pass; operators lower or switch it off",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { user, channelId } = yield* pairedChannel("Warming up")
          const channel = yield* channelOf(user, channelId)
          const { inbound, safety, send: sendText } = yield* clientFor(user, channelId)
          const send = (to: string) => sendText(to, "Hello, a first message")
          // a contact who wrote first: what the channel sends them is a reply, not a new chat
          const regular = wa.contact("+4915133999999")
          yield* regular.says("Hi, what are your opening hours?")
          yield* eventually(inbound(), (page) => page.data.length > 0)
          for (let i = 0; i < 20; i++) {
            wa.contact(newContact(i))
            yield* send(newContact(i))
          }
          // raw: the test reads the Retry-After header, which the typed client does not show
          const warmUpRefusal = yield* request("POST", "/v1/messages", {
            ...as(user),
            body: { channel_id: channelId, to: newContact(20), text: { body: "Hello, a first message" } }
          })
          assert.strictEqual(warmUpRefusal.status, 429, warmUpRefusal.text)
          const error = envelopeOf(warmUpRefusal)
          assert.strictEqual(error.code, "QR_SAFETY_LIMIT_REACHED")
          assert.strictEqual(error.details.reason, "warm_up")
          assert.strictEqual(error.details.limit, 20)
          assert.strictEqual(error.details.warm_up_day, 1)
          // day 2's cap (34) has room for the 20 of today: retry when day 2 begins
          const warmUp = (yield* safety()).warm_up
          assert.strictEqual(error.details.retry_at, warmUp.next_day_at)
          assert.strictEqual(Date.parse(warmUp.next_day_at!) - Date.parse(warmUp.linked_at!), 24 * 3600_000)
          assert.isAtMost(Math.abs(Date.parse(warmUp.linked_at!) - Date.parse(channel.updated_at)), 60_000)
          const retryAfter = Number(warmUpRefusal.headers["retry-after"])
          assert.isAtLeast(retryAfter, 24 * 3600 - 120)
          assert.isAtMost(retryAfter, 24 * 3600)
          assert.deepInclude(warmUp, {
            status: "warming_up",
            override: "none",
            day: 1,
            days: 14,
            limit: 20,
            new_contacts_24h: 20,
            remaining: 0
          })
          assert.strictEqual(Date.parse(warmUp.ends_at!) - Date.parse(warmUp.linked_at!), 14 * 24 * 3600_000)
          // nothing was stored for the refused send
          const sql = yield* SqlClient.SqlClient
          const stored = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM messages
            WHERE channel_id = ${channelId} AND to_number = ${newContact(20)}`
          assert.strictEqual(stored[0]!.n, 0)

          // a reply to the contact who wrote first is not a warm-up send
          yield* send(regular.number)
          const metrics = yield* scrape
          const judged = (contact: string, outcome: string) =>
            total(metrics, "switchboard_qr_send_checks_total", { contact, outcome })
          assert.isAtLeast(judged("new", "accepted"), 20)
          assert.isAtLeast(judged("new", "warm_up"), 1)
          assert.isAtLeast(judged("known", "accepted"), 1)

          // operators: a lower ceiling refuses sooner (with that limit), off lets new contacts through
          const lowered = yield* qrWarmUp(user.workspaceId, channelId, { max: 5 })
          assert.deepStrictEqual(lowered, {
            workspace_id: user.workspaceId,
            channel_id: channelId,
            warm_up: "max 5 per day"
          })
          const atFive = yield* refused(send(newContact(21)))
          assert.strictEqual(atFive.status, 429)
          assert.strictEqual(atFive.code, "QR_SAFETY_LIMIT_REACHED")
          assert.strictEqual(atFive.details.limit, 5)
          yield* qrWarmUp(user.workspaceId, channelId, "off")
          wa.contact(newContact(22))
          yield* send(newContact(22))
          const off = yield* safety()
          assert.deepInclude(off.warm_up, { status: "off", override: "off", limit: null, remaining: null })
          // back to the default ramp: refused again
          yield* qrWarmUp(user.workspaceId, channelId, "default")
          assert.strictEqual((yield* refused(send(newContact(23)))).status, 429)
        }).pipe(Effect.orDie),
      { timeout: 180_000 }
    )

    it.scoped(
      "pauses new chats while WhatsApp's reach-out timelock holds and when its new-chat quota is used up; replies still go",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { user, channelId } = yield* pairedChannel("Timelocked")
          const { inbound, safety, send: sendText } = yield* clientFor(user, channelId)
          const send = (to: string) => sendText(to, "Hello")
          const regular = wa.contact("+4915144000001")
          yield* regular.says("Hello?")
          yield* eventually(inbound(), (page) => page.data.length > 0)
          const stranger = wa.contact("+4915144000002")

          const ends = Math.floor(Date.now() / 1000) + 3600
          wa.mexNotification("NotificationUserReachoutTimelockUpdate", {
            xwa2_notify_account_reachout_timelock: {
              is_active: true,
              time_enforcement_ends: String(ends),
              enforcement_type: "DEFAULT"
            }
          })
          const locked = yield* eventually(channelOf(user, channelId), (c) => c.status_reason === "reachout_timelocked")
          assert.deepInclude(locked, { status: "connected", status_reason: "reachout_timelocked" })
          const shown = yield* eventually(safety(), (b) => b.restrictions.timelock_until !== null)
          assert.strictEqual(shown.restrictions.timelock_until, new Date(ends * 1000).toISOString())
          // raw: the test reads the Retry-After header, which the typed client does not show
          const timelocked = yield* request("POST", "/v1/messages", {
            ...as(user),
            body: { channel_id: channelId, to: stranger.number, text: { body: "Hello" } }
          })
          assert.strictEqual(timelocked.status, 429, timelocked.text)
          assert.deepInclude(envelopeOf(timelocked).details, {
            reason: "timelock",
            retry_at: new Date(ends * 1000).toISOString()
          })
          assert.isAtLeast(Number(timelocked.headers["retry-after"]), 3500)
          // the contact who wrote first still gets an answer
          yield* send(regular.number)

          wa.mexNotification("NotificationUserReachoutTimelockUpdate", {
            xwa2_notify_account_reachout_timelock: { is_active: false }
          })
          yield* eventually(channelOf(user, channelId), (c) => c.status_reason === "restriction_lifted")
          assert.isNull((yield* safety()).restrictions.timelock_until)
          yield* send(stranger.number)

          // WhatsApp's own new-chat capping: used up, new contacts wait for the next cycle
          const cycleEnd = Math.floor(Date.now() / 1000) + 7200
          wa.mexNotification("MessageCappingInfoNotification", {
            xwa2_notify_new_chat_messages_capping_info_update: {
              total_quota: 50,
              used_quota: 50,
              cycle_end_timestamp: String(cycleEnd),
              capping_status: "CAPPED"
            }
          })
          yield* eventually(channelOf(user, channelId), (c) => c.status_reason === "new_chats_capped")
          const capped = yield* refused(send(wa.contact("+4915144000003").number))
          assert.strictEqual(capped.status, 429, JSON.stringify(capped))
          assert.strictEqual(capped.code, "QR_SAFETY_LIMIT_REACHED")
          assert.deepInclude(capped.details, {
            reason: "new_chat_cap",
            limit: 50,
            retry_at: new Date(cycleEnd * 1000).toISOString()
          })
          assert.deepInclude((yield* safety()).restrictions.new_chat_quota, { total: 50, used: 50 })
          yield* send(regular.number)
        }).pipe(Effect.orDie),
      { timeout: 180_000 }
    )

    it.scoped(
      "pauses a channel WhatsApp throttles (rate-overlimit): one lookup instead of one per retry, and the channel says rate_limited",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { user, channelId } = yield* pairedChannel("Throttled")
          const { message, send } = yield* clientFor(user, channelId)
          const throttled = wa.contact("+4915155000001")
          throttled.lookupError = { code: "429", text: "rate-overlimit" }
          const first = yield* send(throttled.number)
          const withRetry = yield* eventually(
            message(first.id),
            (m) => m.timeline.some((t) => t.to_state === "failed_retryable"),
            30_000
          )
          const retried = withRetry.timeline.find((t) => t.to_state === "failed_retryable")
          assert.include(retried!.reason!, "throttled")
          yield* eventually(channelOf(user, channelId), (c) => c.status_reason === "rate_limited")
          // the channel pauses (30 s first): no retry asks WhatsApp again meanwhile, and nothing
          // else of the channel goes out either
          const other = wa.contact("+4915155000002")
          const second = yield* send(other.number)
          yield* Effect.sleep("3 seconds")
          assert.strictEqual(throttled.lookups, 1)
          assert.deepStrictEqual(other.received, [])
          assert.strictEqual((yield* message(second.id)).status, "queued")
        }).pipe(Effect.orDie),
      { timeout: 180_000 }
    )

    it.scoped(
      "fails a send to a number that is not on WhatsApp fast (not_on_whatsapp), checking each number once per channel",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const { user, channelId } = yield* pairedChannel("Checks recipients")
          const { client, message, safety, send } = yield* clientFor(user, channelId)
          const checksOf = (number: string) => wa.contactChecks.filter((n) => `+${n}` === number).length
          // no such WhatsApp user on the fake network
          const nobody = "+4915166000001"
          const sent = yield* send(nobody)
          const failed = yield* eventually(message(sent.id), (m) => m.status === "failed_permanent", 30_000)
          assert.strictEqual(failed.status, "failed_permanent", JSON.stringify(failed))
          assert.deepStrictEqual([failed.failure?.class, failed.failure?.code], ["permanent", "not_on_whatsapp"])
          // one attempt: not retried, nothing was sent
          assert.strictEqual(failed.timeline.filter((t) => t.to_state === "dispatching").length, 1)
          assert.include((yield* channelEvents(sent.id)).map((e) => e.type), "message.failed")
          assert.strictEqual(checksOf(nobody), 1)
          // WhatsApp's answer shows on the contact, in the list and on its own
          const contactOf = (number: string) =>
            Effect.map(
              client.contacts.list({ urlParams: { q: number } }),
              (page) => page.data.find((c) => c.phone_number === number)
            )
          const found = yield* eventually(contactOf(nobody), (c) => c !== undefined && c.whatsapp.status !== "unknown")
          assert.isDefined(found)
          const notOnWhatsApp = found!
          assert.strictEqual(notOnWhatsApp.whatsapp.status, "not_on_whatsapp")
          assert.isAtMost(Math.abs(Date.parse(notOnWhatsApp.whatsapp.checked_at!) - Date.now()), 60_000)
          const single = yield* client.contacts.get({ path: { contactId: notOnWhatsApp.id } })
          assert.deepStrictEqual(single.whatsapp, notOnWhatsApp.whatsapp)
          // the answer was about that number: a contact given another number is unchecked again
          const moved = yield* client.contacts.update({
            path: { contactId: notOnWhatsApp.id },
            payload: { phone_number: "+4915166000009" }
          })
          assert.deepStrictEqual(moved.whatsapp, { status: "unknown", checked_at: null })

          // a WhatsApp user is checked once, then remembered
          const alice = wa.contact("+4915166000002")
          for (const text of ["one", "two"]) {
            yield* send(alice.number, text)
          }
          yield* eventually(Effect.sync(() => alice.received.length), (n) => n === 2, 30_000)
          assert.deepStrictEqual(alice.received.map((m) => m.text), ["one", "two"])
          assert.strictEqual(checksOf(alice.number), 1)
          const onWhatsApp = yield* eventually(
            contactOf(alice.number),
            (c) => c !== undefined && c.whatsapp.status !== "unknown"
          )
          assert.strictEqual(onWhatsApp?.whatsapp.status, "on_whatsapp")
          // a contact no QR channel checked yet (the typed client decodes the declared 201 only)
          const created = yield* client.contacts.create({ payload: { phone_number: "+4915166000003" } })
          assert.deepStrictEqual(created.whatsapp, { status: "unknown", checked_at: null })
          // the channel's health counts both answers and the three new chats
          const health = yield* safety()
          assert.deepStrictEqual(health.recipient_checks_24h, { on_whatsapp: 1, not_on_whatsapp: 1 })
          assert.deepStrictEqual(health.sends_24h, { new_contacts: 3, existing_contacts: 0 })
          assert.deepInclude(health.restrictions, { last_signal: null, held_by_timelock: 0 })
          const metrics = yield* scrape
          assert.isAtLeast(total(metrics, "switchboard_qr_recipient_checks_total", { result: "not_on_whatsapp" }), 1)
          assert.isAtLeast(total(metrics, "switchboard_qr_recipient_checks_total", { result: "remembered" }), 1)
        }).pipe(Effect.orDie),
      { timeout: 180_000 }
    )
  })
})
