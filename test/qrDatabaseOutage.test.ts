/**
 * What a paired QR channel hears while its database is away is kept until Postgres takes it
 * (docs/OPERATING.md "Provider input during a database outage"): real Baileys against the fake
 * WhatsApp server, the app's Postgres behind a proxy (test/support/PgProxy.ts) that the test
 * breaks. A text, an image, a read receipt and a LID mapping arrive (a) while the database cannot
 * be reached for 5 s, (b) while the connection writing them is killed as the write lands; a text
 * whose first copy the link cannot decrypt comes again (a retry receipt) during an outage. Each is
 * recorded exactly once afterwards, with one `message.received` per message. Real Postgres only.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { testDatabaseUrl } from "@switchboard/db/testing"
import type { Messaging } from "@switchboard/domain"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import type { FakeContact } from "./fake-whatsapp/index.js"
import { api, createKey, eventually, request, type SignedUp } from "./support/Fixtures.js"
import * as PgProxy from "./support/PgProxy.js"
import { appWith, as, pairedChannel, sendText, Wa } from "./support/QrApp.js"
import { receiver } from "./support/Receiver.js"
import * as TestApp from "./support/TestApp.js"

const OUTAGE_MS = 5_000

const proxied = PgProxy.layer
const app = Layer.merge(
  appWith({ phoneNumber: "+15550007070" }, {}, { database: proxied, sharding: TestApp.processLocks }),
  proxied
)

/** The channel's inbound messages as the API lists them, until `done` (polled once the database answers again). */
const inbound = (user: SignedUp, channelId: `ch_${string}`, done: (m: ReadonlyArray<Messaging.Message>) => boolean) =>
  Effect.flatMap(api(user.accessToken, user.workspaceId), (client) =>
    Effect.map(
      eventually(
        client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId, limit: 100 } }),
        (page) => done(page.data),
        60_000
      ),
      (page) => page.data
    ))

/**
 * A paired channel, a webhook endpoint for `message.received`, a contact that wrote first (so its
 * session is known) and got our text with no receipt yet, and a contact known by its LID only.
 */
const scene = (name: string) =>
  Effect.gen(function*() {
    const wa = yield* Wa
    const { channelId, user } = yield* pairedChannel(name)
    const sink = yield* receiver()
    const admin = yield* createKey(user, { scopes: ["webhooks.manage"] })
    yield* (yield* api(admin.secret)).webhooks.create({
      payload: { url: `${sink.url}/hooks`, event_types: ["message.received"] }
    })
    const contact = wa.contact(`+49151${randomBytes(3).readUIntBE(0, 3).toString().padStart(8, "0")}`)
    const hidden = wa.contact(`+49152${randomBytes(3).readUIntBE(0, 3).toString().padStart(8, "0")}`)
    contact.autoReceipts = { delivered: false, read: false }
    yield* contact.says("hello")
    yield* hidden.says("who am I", { addressing: "lid" })
    yield* inbound(user, channelId, (m) => m.length === 2)
    const { message: ours } = yield* sendText(user, channelId, contact, "Your order shipped")
    return { wa, channelId, user, sink, contact, hidden, ours }
  })

type Scene = Effect.Effect.Success<ReturnType<typeof scene>>

/** 50 kB that start as a PNG does: the media check reads the signature (docs/API.md "Media"). */
const png = () => {
  const bytes = randomBytes(50_000)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  return bytes
}

/** What the contacts send while the database is broken: a text, an image, a read receipt, a LID's number. */
const provide = (s: Scene, contact: FakeContact = s.contact) =>
  Effect.gen(function*() {
    const text = yield* contact.says("are you there?")
    const image = yield* contact.sendsMedia("image", png(), { mimetype: "image/png" })
    yield* contact.acknowledges(s.ours.id, "read")
    yield* s.hidden.revealsNumber()
    return { text, image: image.id }
  })

/** Every item recorded once; one `message.received` per inbound message. */
const recordedOnce = (s: Scene) =>
  Effect.gen(function*() {
    const client = yield* api(s.user.accessToken, s.user.workspaceId)
    const messages = yield* inbound(
      s.user,
      s.channelId,
      (m) => m.length >= 4 && m.every((x) => x.media === null || x.media.status !== "pending")
    )
    const bodies = messages.flatMap((m) => (m.type === "text" ? [m.text.body] : [m.type]))
    assert.sameMembers(bodies, ["hello", "who am I", "are you there?", "image"], JSON.stringify(bodies))
    assert.strictEqual(messages.find((m) => m.type === "image")!.media!.status, "ready")

    const read = yield* eventually(client.messages.get({ path: { messageId: s.ours.id } }), (m) => m.status === "read")
    assert.strictEqual(read.status, "read")
    // the receipt applied once: one message.read, one move to read in the timeline
    const sql = yield* SqlClient.SqlClient
    const reads = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events
      WHERE object_id = ${s.ours.id} AND type = 'message.read'`.pipe(Effect.orDie)
    assert.strictEqual(reads[0]!.n, 1, "one message.read")
    const moves = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM message_transitions
      WHERE message_id = ${s.ours.id} AND to_state = 'read'`.pipe(Effect.orDie)
    assert.strictEqual(moves[0]!.n, 1, "one move to read")

    const lidMessage = messages.find((m) => m.type === "text" && m.text.body === "who am I")!
    const hidden = yield* eventually(
      client.contacts.get({ path: { contactId: lidMessage.contact_id! } }),
      (c) => c.phone_number !== null
    )
    assert.strictEqual(hidden.phone_number, s.hidden.number, JSON.stringify(hidden))

    yield* eventually(Effect.sync(() => s.sink.received.length), (n) => n >= messages.length, 30_000)
    // a late duplicate would come within the webhook retry delay scale (tests: 1 ms steps)
    yield* Effect.sleep("1 second")
    const delivered = s.sink.received.map((r) =>
      (JSON.parse(r.body) as { data: { message_id: string; type: string } }).data
    )
    assert.deepStrictEqual(
      Array.from(new Set(delivered.map((d) => d.message_id))).sort(),
      messages.map((m) => m.id).sort(),
      "a message.received for each message"
    )
    // each once; a text first heard undecryptable is recorded at once as `unsupported` and completed
    // in place with a second message.received naming its type (docs/QR-CHANNELS.md "Messages
    // without content"): never a third, never the same one twice
    for (const m of messages) {
      const types = delivered.filter((d) => d.message_id === m.id).map((d) => d.type).sort()
      const once = types.length === 1 && types[0] === m.type
      const completed = types.length === 2 && types.join() === [m.type, "unsupported"].sort().join()
      assert.isTrue(once || completed, `message.received of ${m.type}: ${types.join(", ")}`)
    }
    return messages
  })

describe.skipIf(testDatabaseUrl() === undefined)("QR input while the database is away", () => {
  layer(app, { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "records a text, an image, a receipt and a LID mapping heard while Postgres cannot be reached for 5 s",
      () =>
        Effect.gen(function*() {
          const s = yield* scene("Outage")
          const proxy = yield* PgProxy.Proxy
          const outage = yield* Effect.fork(Effect.promise(() => proxy.outage(OUTAGE_MS)))
          yield* provide(s)
          yield* outage.await
          yield* recordedOnce(s)
        }),
      180_000
    )

    it.scoped(
      "records each of them once when the connection writing it is killed as the write lands",
      () =>
        Effect.gen(function*() {
          const s = yield* scene("Killed")
          const proxy = yield* PgProxy.Proxy
          const killedOn = (pattern: RegExp, act: Effect.Effect<unknown>) =>
            Effect.gen(function*() {
              const killed = proxy.dropOnStatement(pattern)
              yield* act
              return yield* Effect.promise(() => killed).pipe(
                Effect.timeout("30 seconds"),
                Effect.catchAll(() => Effect.dieMessage(`no statement matched ${pattern}`))
              )
            })
          yield* killedOn(/INSERT INTO messages/i, s.contact.says("are you there?"))
          yield* killedOn(
            /INSERT INTO messages/i,
            s.contact.sendsMedia("image", png(), { mimetype: "image/png" })
          )
          yield* killedOn(/UPDATE messages/i, s.contact.acknowledges(s.ours.id, "read"))
          yield* killedOn(/whatsapp_lid_mappings/i, s.hidden.revealsNumber())
          yield* recordedOnce(s)
        }),
      180_000
    )

    it.scoped(
      "records once a text the link could not decrypt, sent again after its retry receipt during an outage",
      () =>
        Effect.gen(function*() {
          const s = yield* scene("Retry")
          const proxy = yield* PgProxy.Proxy
          const outage = yield* Effect.fork(Effect.promise(() => proxy.outage(OUTAGE_MS)))
          const id = yield* s.contact.says("are you there?", { garbled: true })
          const image = yield* s.contact.sendsMedia("image", png(), { mimetype: "image/png" })
          yield* s.contact.acknowledges(s.ours.id, "read")
          yield* s.hidden.revealsNumber()
          yield* outage.await
          const messages = yield* recordedOnce(s)
          // the link asked for it again (a retry receipt), and the same WhatsApp id was recorded once
          assert.include(s.wa.retryRequests, id)
          assert.isDefined(messages.find((m) => m.type === "image"), image.id)
        }),
      180_000
    )

    it.scoped(
      "applies a read receipt the phone sent while the link was down, once the link is back",
      () =>
        Effect.gen(function*() {
          // the finding behind it: under faults the runner's link reconnects (its entity stopped
          // when the shard locks could not be refreshed, then started again), and a read receipt
          // sent as it did was lost, the message left `delivered`: WhatsApp keeps it for the
          // device's next login (the fake server dropped it)
          const wa = yield* Wa
          const { channelId, user } = yield* pairedChannel("Receipts")
          const contact = wa.contact("+4915112347575")
          contact.autoReceipts = { delivered: true, read: false }
          const { message } = yield* sendText(user, channelId, contact, "Read me later")
          const client = yield* api(user.accessToken, user.workspaceId)
          yield* eventually(client.messages.get({ path: { messageId: message.id } }), (m) => m.status === "delivered")
          wa.dropConnections()
          yield* eventually(Effect.sync(() => wa.companionOnline), (online) => !online, 10_000)
          yield* contact.acknowledges(message.id, "read")
          const read = yield* eventually(
            client.messages.get({ path: { messageId: message.id } }),
            (m) => m.status === "read",
            60_000
          )
          assert.strictEqual(read.status, "read")
          const sql = yield* SqlClient.SqlClient
          const reads = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events
            WHERE object_id = ${message.id} AND type = 'message.read'`.pipe(Effect.orDie)
          assert.strictEqual(reads[0]!.n, 1, "one message.read")
        }),
      180_000
    )

    it.scoped(
      "answers a rejected call once when the connection is killed between recording the call and queueing its reply",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const proxy = yield* PgProxy.Proxy
          const { channelId, user } = yield* pairedChannel("Calls")
          const policy = { reject: true, reply_text: "We can't take calls here; please write." }
          const patched = yield* request("PATCH", `/v1/channels/${channelId}`, {
            ...as(user),
            body: { call_policy: policy }
          })
          assert.strictEqual(patched.status, 200, patched.text)
          const caller = wa.contact("+4915112347474")
          const call = caller.calls()
          // the QR daily cap's lock on the channel: the first statement of the reply's writing
          // (once the call is recorded, or in the same transaction)
          const killed = proxy.dropOnStatement(/SELECT id FROM channels WHERE id = \$1 FOR UPDATE/, { only: "that" })
          yield* call.offer
          yield* Effect.promise(() => killed).pipe(
            Effect.timeout("30 seconds"),
            Effect.catchAll(() => Effect.dieMessage("the reply's statement never ran"))
          )
          const reply = yield* caller.nextReceived(0).pipe(
            Effect.timeout("30 seconds"),
            Effect.catchAll(() => Effect.dieMessage("the caller never got the policy's reply"))
          )
          assert.strictEqual(reply.text, policy.reply_text)
          const client = yield* api(user.accessToken, user.workspaceId)
          const calls = yield* eventually(
            client.messages.list({ urlParams: { direction: "inbound", channel_id: channelId, limit: 100 } }),
            (page) => page.data.length >= 1
          )
          assert.deepStrictEqual(calls.data.map((m) => m.call), [{
            video: false,
            status: "rejected",
            duration_s: null
          }])
          // answered once: one reply queued, one reached the phone
          const outbound = yield* client.messages.list({
            urlParams: { direction: "outbound", channel_id: channelId, limit: 100 }
          })
          assert.deepStrictEqual(outbound.data.map((m) => m.text.body), [policy.reply_text])
          yield* Effect.sleep("1 second")
          assert.strictEqual(caller.received.length, 1)
        }),
      180_000
    )

    it.scoped(
      "dispatches every queued send once when the dispatch loop's statements lose their connection",
      () =>
        Effect.gen(function*() {
          const wa = yield* Wa
          const proxy = yield* PgProxy.Proxy
          const { channelId, user } = yield* pairedChannel("Dispatch")
          const contact = wa.contact("+4915112347373")
          const client = yield* api(user.accessToken, user.workspaceId)
          /** A send, again with its key after a 503 or a 409 in_progress (the proxy may cut the API's statement too). */
          const send = (i: number) =>
            Effect.gen(function*() {
              const key = `outage-dispatch-${channelId}-${i}`
              for (let attempt = 0; attempt < 100; attempt++) {
                const sent = yield* request("POST", "/v1/messages", {
                  ...as(user),
                  headers: { "idempotency-key": key },
                  body: { channel_id: channelId, to: contact.number, text: { body: `queued ${i}` } }
                })
                if (sent.status === 201) return sent.body.id as string
                assert.include([503, 409], sent.status, sent.text)
                yield* Effect.sleep("200 millis")
              }
              return yield* Effect.dieMessage(`send ${i} never accepted`)
            })
          const killedOn = <R>(pattern: RegExp, act: Effect.Effect<ReadonlyArray<string>, never, R>) =>
            Effect.gen(function*() {
              const killed = proxy.dropOnStatement(pattern, { only: "that" })
              const ids = yield* act
              yield* Effect.promise(() => killed).pipe(
                Effect.timeout("30 seconds"),
                Effect.catchAll(() => Effect.dieMessage(`no statement matched ${pattern}`))
              )
              return ids
            })
          // the loop's read of the channel's due messages, then its claim of one (-> dispatching)
          const first = yield* killedOn(/q_pid/, Effect.forEach([0, 1, 2], send))
          const second = yield* killedOn(/AS i\(id, at, waiting/, Effect.forEach([3, 4, 5], send))
          const ids = [...first, ...second]
          // none left queued or dispatching: each taken by WhatsApp and read by the contact (its
          // phone sends delivered, then read), every receipt applied
          for (const id of ids) {
            const m = yield* eventually(
              client.messages.get({ path: { messageId: id as `msg_${string}` } }),
              (m) => m.status === "read",
              // a send caught by a link that closed under it (the runner gives up its shards when the
              // lock refresh fails) ends at its own timeout, twice QR_QUERY_TIMEOUT (60 s), then goes
              // back to the queue (docs/RETRIES.md): one such attempt and the next fit in 150 s
              150_000
            )
            if (m.status !== "read") {
              // what the message went through, for the failure's message
              const sql = yield* SqlClient.SqlClient
              const timeline = yield* sql`SELECT from_state, to_state, at FROM message_transitions
                WHERE message_id = ${id} ORDER BY at`.pipe(Effect.orDie)
              assert.fail(
                `${id}: ${m.status}; ${JSON.stringify(timeline)}; receipts sent: ${
                  JSON.stringify(contact.receiptsSent.filter((r) => r.id === id))
                }`
              )
            }
            assert.strictEqual(m.status, "read", `${id}: ${m.status}`)
          }
          yield* eventually(Effect.sync(() => contact.received.length), (n) => n >= ids.length, 30_000)
          // each reached the contact's phone once
          for (const id of ids) assert.strictEqual(contact.received.filter((r) => r.id === id).length, 1, id)
          assert.strictEqual(contact.stanzaIds.length, ids.length, JSON.stringify(contact.stanzaIds))
        }),
      400_000
    )
  })
})
