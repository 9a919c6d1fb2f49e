/**
 * QR channels in tests: the app with its QR provider pointed at a fake WhatsApp server, and the
 * HTTP steps users take (create, pair over the SSE stream, send, watch the status).
 */
import { SqlClient } from "@effect/sql"
import { assert } from "@effect/vitest"
import { Ids, Messaging } from "@switchboard/domain"
import { WhatsAppRoot } from "@switchboard/providers"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { type FakeContact, FakeWhatsApp, type FakeWhatsAppOptions } from "../fake-whatsapp/index.js"
import * as QrHarness from "../qr/QrHarness.js"
import { api, bodyOf, eventually, request, type SignedUp, signUp } from "./Fixtures.js"
import * as Sse from "./SseClient.js"
import * as TestApp from "./TestApp.js"

export class Wa extends Context.Tag("test/Wa")<Wa, FakeWhatsApp>() {}

export const waLayer = (options: FakeWhatsAppOptions = {}) => Layer.scoped(Wa, FakeWhatsApp.scoped(options))

/** The app with its QR provider pointed at the fake server (whose certificate root this process trusts). */
export const appWith = (
  fakeOptions: FakeWhatsAppOptions = {},
  qr: QrHarness.Settings = {},
  infrastructure: Omit<TestApp.Infrastructure, "qr"> = {}
) =>
  Layer.unwrapEffect(Effect.map(Wa, (wa) => {
    WhatsAppRoot.useFakeWhatsAppRoot(wa.rootPublicKey)
    return TestApp.layer({}, { ...infrastructure, qr: QrHarness.settings(wa, { reconnectMaxAttempts: 5, ...qr }) })
  })).pipe(Layer.provideMerge(waLayer(fakeOptions)))

export const as = (user: SignedUp) => ({ token: user.accessToken, workspace: user.workspaceId })

export const createQrChannel = (user: SignedUp, name = "Support") =>
  Effect.gen(function*() {
    const created = yield* request("POST", "/v1/channels", { ...as(user), body: { provider: "qr", name } })
    assert.strictEqual(created.status, 201, created.text)
    // a channel id as the typed client takes it in paths and bodies
    return bodyOf(Schema.Struct({ id: Ids.IdRef("ch") }), created).id
  })

/** A channel as `GET /v1/channels/{id}` answers it. */
const ChannelBody = Schema.Struct(Messaging.Channel.fields)

export const channelOf = (user: SignedUp, id: string) =>
  Effect.map(request("GET", `/v1/channels/${id}`, as(user)), (r) => bodyOf(ChannelBody, r))

export const channelEvents = (channelId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ type: string; envelope: string }>`SELECT type, envelope FROM events
      WHERE object_id = ${channelId} ORDER BY created_at, id`
    return rows.map((r) => ({ type: r.type, data: JSON.parse(r.envelope).data }))
  }).pipe(Effect.orDie)

/** Opens the stream, starts pairing, lets the fake phone scan the first code; the stream as it ended. */
export const pairOverHttp = (wa: FakeWhatsApp, user: SignedUp, channelId: string) =>
  Effect.gen(function*() {
    const stream = yield* Sse.open(`/v1/channels/${channelId}/qr/stream`, as(user))
    assert.strictEqual(stream.status, 200)
    assert.include(stream.headers["content-type"], "text/event-stream")
    const snapshot = yield* stream.next()
    assert.strictEqual(Option.getOrThrow(snapshot).event, "snapshot")
    const started = yield* request("POST", `/v1/channels/${channelId}/qr/start`, as(user))
    assert.strictEqual(started.status, 200, started.text)
    const code = yield* stream.nextNamed("qr.updated")
    yield* wa.phone.scan(code.data.qr)
    while (true) {
      const state = yield* stream.nextNamed("qr.state")
      if (state.data.to_status === "connected") break
    }
    yield* stream.ended
    return { stream, started: started.body, code: code.data }
  })

/** Sends `text` to `contact` through the channel and waits until the contact decrypted it. */
export const sendText = (user: SignedUp, channelId: string, contact: FakeContact, text: string) =>
  Effect.gen(function*() {
    const sent = yield* request("POST", "/v1/messages", {
      ...as(user),
      body: { channel_id: channelId, to: contact.number, text: { body: text } }
    })
    assert.strictEqual(sent.status, 201, sent.text)
    const received = yield* contact.nextReceived().pipe(Effect.timeout("30 seconds"), Effect.orDie)
    assert.strictEqual(received.text, text)
    return { message: sent.body, received }
  })

export const waitForStatus = (user: SignedUp, id: string, status: string) =>
  Effect.gen(function*() {
    const channel = yield* eventually(channelOf(user, id), (c) => c.status === status, 20_000)
    assert.strictEqual(channel.status, status, JSON.stringify(channel))
    return channel
  })

/** A new user with a QR channel paired to the fake phone, `connected`. */
export const pairedChannel = (name = "Support") =>
  Effect.gen(function*() {
    const wa = yield* Wa
    const user = yield* signUp()
    const channelId = yield* createQrChannel(user, name)
    yield* pairOverHttp(wa, user, channelId)
    yield* waitForStatus(user, channelId, "connected")
    return { user, channelId }
  })

/** The channel's inbound messages (a page of 100) once `done` holds, within `timeoutMs` (`eventually`'s default). */
export const inboundUntil = (
  user: SignedUp,
  channelId: `ch_${string}`,
  done: (messages: ReadonlyArray<Messaging.Message>) => boolean,
  timeoutMs?: number
) =>
  Effect.flatMap(api(user.accessToken, user.workspaceId), (client) =>
    Effect.map(
      eventually(
        client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId, limit: 100 } }),
        (page) => done(page.data),
        timeoutMs
      ),
      (page) => page.data
    ))
