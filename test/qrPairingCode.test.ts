/**
 * Linking a number by pairing code (docs/QR-CHANNELS.md "Linking with a code"), end to end through
 * the real Baileys client and the fake WhatsApp server playing the phone: `qr/start` with
 * `{method: "code", phone_number}` puts WhatsApp's 8-character code on the stream (never in
 * `qr/status`), the user types it on the phone (a wrong code first is refused and may be typed
 * again) and the channel is `connected`, sending and hearing texts; a code never typed expires
 * (`pairing_code_expired`) and a new one can be asked for; a number WhatsApp does not link ends
 * with `phone_number_refused`; the database failing once while the code is issued or the link
 * completes still leaves the channel `connected`, once.
 */
import { assert, describe, layer } from "@effect/vitest"
import { testDatabaseUrl } from "@switchboard/db/testing"
import { Duration, Effect, Layer, Option } from "effect"
import type { FakeWhatsApp } from "./fake-whatsapp/index.js"
import { api, eventually, request, type SignedUp, signUp } from "./support/Fixtures.js"
import * as PgProxy from "./support/PgProxy.js"
import { appWith, as, channelEvents, channelOf, createQrChannel, sendText, Wa, waitForStatus } from "./support/QrApp.js"
import * as Sse from "./support/SseClient.js"

const PHONE = "+15550006060"
const CODE = /^[A-Z0-9]{8}$/

/** Opens the stream and asks for a code for `phoneNumber`; the stream and the code's frame. */
const askForCode = (user: SignedUp, channelId: string, phoneNumber: string) =>
  Effect.gen(function*() {
    const stream = yield* Sse.open(`/v1/channels/${channelId}/qr/stream`, as(user))
    assert.strictEqual(Option.getOrThrow(yield* stream.next()).event, "snapshot")
    const started = yield* request("POST", `/v1/channels/${channelId}/qr/start`, {
      ...as(user),
      body: { method: "code", phone_number: phoneNumber }
    })
    assert.strictEqual(started.status, 200, started.text)
    return stream
  })

/** The code the stream shows (a `qr.updated` with `pairing_code`, `qr: null`). */
const codeShown = (stream: Sse.SseStream) =>
  Effect.gen(function*() {
    const frame = yield* stream.nextNamed("qr.updated", "30 seconds")
    assert.isNull(frame.data.qr)
    assert.isNull(frame.data.qr_expires_at)
    assert.match(frame.data.pairing_code, CODE)
    assert.isTrue(Date.parse(frame.data.pairing_code_expires_at) > Date.now())
    return frame.data.pairing_code as string
  })

/** Types the code on the fake phone and follows the stream to `connected`. */
const typeAndConnect = (wa: FakeWhatsApp, stream: Sse.SseStream, code: string) =>
  Effect.gen(function*() {
    assert.strictEqual(yield* wa.phone.typesCode(code), "linked")
    while (true) {
      const state = yield* stream.nextNamed("qr.state", "30 seconds")
      if (state.data.to_status === "connected") return state
      assert.notStrictEqual(state.data.to_status, "disconnected", JSON.stringify(state.data))
    }
  })

const connectedEvents = (channelId: string) =>
  Effect.map(channelEvents(channelId), (events) => events.filter((e) => e.type === "channel.connected"))

describe("QR pairing by code", () => {
  layer(appWith({ phoneNumber: PHONE }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("links by code (a wrong code refused first), then sends and hears texts", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const user = yield* signUp()
        const channelId = yield* createQrChannel(user, "By code")
        const stream = yield* askForCode(user, channelId, PHONE)
        const code = yield* codeShown(stream)
        // the code shows once Baileys made it; WhatsApp hears the request just after (Baileys does
        // not wait for its answer), later at the load of a full run
        const requests = yield* eventually(Effect.sync(() => [...wa.phone.codeRequests]), (r) => r.length > 0, 30_000)
        assert.deepStrictEqual(requests, [PHONE.slice(1)])

        // the status says a code shows, never which
        const status = yield* request("GET", `/v1/channels/${channelId}/qr/status`, as(user))
        assert.strictEqual(status.status, 200)
        assert.strictEqual(status.body.status, "awaiting_scan")
        assert.strictEqual(status.body.pairing_code_available, true)
        assert.isString(status.body.pairing_code_expires_at)
        assert.strictEqual(status.body.qr_available, false)
        assert.notInclude(status.text, code)
        // the channel's reason is written as the code is shown, and may land just after it (seen at
        // the load of a full run: still `pairing_started` when the status above was read)
        const issued = yield* eventually(channelOf(user, channelId), (c) => c.status_reason === "pairing_code_issued")
        assert.strictEqual(issued.status_reason, "pairing_code_issued")

        // a mistyped code does not link; the right one, typed after it, does
        const wrong = code === "ABCDEFGH" ? "HGFEDCBA" : "ABCDEFGH"
        assert.strictEqual(yield* wa.phone.typesCode(wrong), "refused")
        const connected = yield* typeAndConnect(wa, stream, code)
        assert.strictEqual(connected.data.reason, "paired")
        yield* stream.ended
        const channel = yield* waitForStatus(user, channelId, "connected")
        assert.strictEqual(channel.phone_number, PHONE)
        assert.strictEqual(wa.linkedDevices, 1)

        const contact = wa.contact("+4915112346060")
        yield* sendText(user, channelId, contact, "Linked by code")
        yield* contact.says("and heard")
        const client = yield* api(user.accessToken, user.workspaceId)
        yield* eventually(
          client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId } }),
          (page) => page.data.some((m) => m.text?.body === "and heard"),
          30_000
        )
        assert.strictEqual((yield* connectedEvents(channelId)).length, 1)
      }), 180_000)

    it.scoped(
      "a number WhatsApp does not link ends the pairing with phone_number_refused",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const user = yield* signUp()
          const channelId = yield* createQrChannel(user, "Wrong number")
          const stream = yield* askForCode(user, channelId, "+4915100000001")
          while (true) {
            const state = yield* stream.nextNamed("qr.state", "30 seconds")
            if (state.data.to_status === "disconnected") {
              assert.strictEqual(state.data.reason, "phone_number_refused")
              break
            }
          }
          yield* stream.ended
          const channel = yield* waitForStatus(user, channelId, "disconnected")
          assert.strictEqual(channel.status_reason, "phone_number_refused")
          assert.include(wa.phone.codeRequests, "4915100000001")
          const status = yield* request("GET", `/v1/channels/${channelId}/qr/status`, as(user))
          assert.strictEqual(status.body.pairing_code_available, false)
        }),
      180_000
    )

    it.scoped(
      "refuses a code request without a number or with a malformed one, echoing neither; {} is QR as before",
      () =>
        Effect.gen(function*() {
          const user = yield* signUp()
          const channelId = yield* createQrChannel(user, "Validation")
          for (
            const body of [
              { method: "code" },
              { method: "code", phone_number: "0151 2345 6789" },
              { method: "qr", phone_number: PHONE },
              { method: "sms", phone_number: PHONE },
              { method: "code", phone_number: PHONE, extra: 1 }
            ]
          ) {
            const refused = yield* request("POST", `/v1/channels/${channelId}/qr/start`, { ...as(user), body })
            assert.strictEqual(refused.status, 422, JSON.stringify(body))
            assert.strictEqual(refused.body.error.code, "VALIDATION_ERROR")
            assert.notInclude(refused.text, "0151 2345 6789")
          }
          // a JSON string rather than an object: one issue that says what to send
          const notAnObject = yield* request("POST", `/v1/channels/${channelId}/qr/start`, {
            ...as(user),
            body: "code"
          })
          assert.strictEqual(notAnObject.status, 422, notAnObject.text)
          assert.deepStrictEqual(notAnObject.body.error.details.issues, [
            { path: [], message: "Expected an object, or no body" }
          ])
          assert.strictEqual((yield* channelOf(user, channelId)).status, "pending")

          const stream = yield* Sse.open(`/v1/channels/${channelId}/qr/stream`, as(user))
          yield* stream.next()
          const started = yield* request("POST", `/v1/channels/${channelId}/qr/start`, { ...as(user), body: {} })
          assert.strictEqual(started.status, 200, started.text)
          const frame = yield* stream.nextNamed("qr.updated", "30 seconds")
          assert.isString(frame.data.qr)
          assert.isNull(frame.data.pairing_code)
        }),
      180_000
    )
  })

  // WhatsApp's refs short: the session (and the code) ends in about 15 s, time enough to type
  // the second code on a loaded machine
  layer(appWith({ phoneNumber: PHONE, refs: 3 }, { qrTimeout: Option.some(Duration.seconds(5)) }), {
    excludeTestServices: true,
    timeout: 240_000
  })((it) => {
    it.scoped(
      "a code never typed expires with pairing_code_expired; a new code asked for then links",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const user = yield* signUp()
          const channelId = yield* createQrChannel(user, "Slow typist")
          const stream = yield* askForCode(user, channelId, PHONE)
          yield* codeShown(stream)
          yield* stream.nextNamed("qr.expired", "30 seconds")
          yield* stream.ended
          const channel = yield* waitForStatus(user, channelId, "disconnected")
          assert.strictEqual(channel.status_reason, "pairing_code_expired")
          const status = yield* request("GET", `/v1/channels/${channelId}/qr/status`, as(user))
          assert.strictEqual(status.body.pairing_code_available, false)

          // the unfinished pairing left nothing that would log in as the number: a new code links
          const again = yield* askForCode(user, channelId, PHONE)
          const code = yield* codeShown(again)
          assert.notInclude(wa.serverErrors.join("\n"), "401")
          yield* typeAndConnect(wa, again, code)
          yield* waitForStatus(user, channelId, "connected")
          assert.strictEqual((yield* connectedEvents(channelId)).length, 1)
        }),
      180_000
    )
  })
})

const cut = (killed: Promise<string>, what: string) =>
  Effect.promise(() => killed).pipe(
    Effect.timeout("30 seconds"),
    Effect.catchAll(() => Effect.dieMessage(`${what} was never cut`))
  )

const proxied = PgProxy.layer
const faulty = Layer.merge(appWith({ phoneNumber: PHONE }, {}, { database: proxied }), proxied)

describe.skipIf(testDatabaseUrl() === undefined)("QR pairing by code while the database fails", () => {
  layer(faulty, { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "ends connected exactly once when the write of the issued code and the write of the link each lose their connection",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const proxy = yield* PgProxy.Proxy
          const user = yield* signUp()
          const channelId = yield* createQrChannel(user, "Faulty")
          // Baileys stores the number it asks a code for: that write is cut as it lands
          const credsCut = proxy.dropOnStatement(/INSERT INTO qr_auth_state/i, { only: "that" })
          const stream = yield* askForCode(user, channelId, PHONE)
          const code = yield* codeShown(stream)
          yield* cut(credsCut, "the creds write")
          // the status change to connected is cut as it lands
          const statusCut = proxy.dropOnStatement(/UPDATE channels SET\s+status = /i, { only: "that" })
          assert.strictEqual(yield* wa.phone.typesCode(code), "linked", wa.serverErrors.join("; "))
          yield* cut(statusCut, "the status write")
          yield* waitForStatus(user, channelId, "connected")
          const events = yield* eventually(connectedEvents(channelId), (e) => e.length > 0, 30_000)
          assert.strictEqual(events.length, 1)
          // still one a while later, and the link works
          yield* sendText(user, channelId, wa.contact("+4915112346161"), "still here")
          assert.strictEqual((yield* connectedEvents(channelId)).length, 1)
        }),
      180_000
    )
  })
})
