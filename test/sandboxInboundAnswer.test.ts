/**
 * `POST /v1/sandbox/sessions/{id}/inbound` answers what it delivered (docs/API.md "Messages"): 202
 * with the recorded message's id and its conversation's, so a client follows it with `GET
 * /v1/messages/{id}` instead of searching the list; a file's message too (its media follows).
 * An audio or a sticker takes no caption (WhatsApp's have none): 422 like any unknown member.
 * In real mode, the database connection that looks the message up is killed as it answers: the
 * answer still names the message, delivered once.
 */
import { assert, describe, layer } from "@effect/vitest"
import { testDatabaseUrl } from "@switchboard/db/testing"
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { request, sandboxSetup } from "./support/Fixtures.js"
import * as PgProxy from "./support/PgProxy.js"
import * as TestApp from "./support/TestApp.js"

const FROM = "+4915112345678"
const PICTURE = readFileSync(join(import.meta.dirname, "..", "docs", "examples", "picture.png")).toString("base64")
/** The first bytes of an Ogg file: an audio the byte check takes. */
const OGG = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(60)]).toString("base64")

const inbound = (key: string, sessionId: string, body: unknown) =>
  request("POST", `/v1/sandbox/sessions/${sessionId}/inbound`, { token: key, body })

describe("the sandbox inbound answer", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("names the message recorded and its conversation, which a client then reads", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([FROM])
        const reply = yield* inbound(key, session.id, { from: FROM, text: { body: "Where is my order?" } })
        assert.strictEqual(reply.status, 202, reply.text)
        assert.deepStrictEqual(Object.keys(reply.body).sort(), ["conversation_id", "message_id", "object"])
        assert.strictEqual(reply.body.object, "sandbox_inbound")
        assert.match(reply.body.message_id, /^msg_/)
        assert.match(reply.body.conversation_id, /^cnv_/)

        const message = yield* request("GET", `/v1/messages/${reply.body.message_id}`, { token: key })
        assert.strictEqual(message.status, 200, message.text)
        assert.deepInclude(message.body, {
          id: reply.body.message_id,
          direction: "inbound",
          conversation_id: reply.body.conversation_id,
          from: FROM,
          channel_id: session.channel_id
        })
        assert.strictEqual(message.body.text.body, "Where is my order?")
        const conversation = yield* request("GET", `/v1/conversations/${reply.body.conversation_id}`, { token: key })
        assert.strictEqual(conversation.status, 200)
        assert.strictEqual(conversation.body.contact.phone_number, FROM)

        // a second message of the same contact: another message, the same conversation
        const again = yield* inbound(key, session.id, { from: FROM, text: { body: "Any news?" } })
        assert.strictEqual(again.status, 202)
        assert.notStrictEqual(again.body.message_id, reply.body.message_id)
        assert.strictEqual(again.body.conversation_id, reply.body.conversation_id)
      }))

    it.effect("names a file's message at once, before its bytes are stored", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([FROM])
        const reply = yield* inbound(key, session.id, {
          from: FROM,
          image: { data_base64: PICTURE, mime_type: "image/png", caption: "the menu" }
        })
        assert.strictEqual(reply.status, 202, reply.text)
        const message = yield* request("GET", `/v1/messages/${reply.body.message_id}`, { token: key })
        assert.strictEqual(message.body.type, "image")
        assert.strictEqual(message.body.image.caption, "the menu")
      }))

    it.effect("refuses a caption on an audio or a sticker as an unknown member, and takes them without", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([FROM])
        for (const kind of ["audio", "sticker"] as const) {
          const file = kind === "audio" ? { data_base64: OGG, mime_type: "audio/ogg" } : {
            data_base64: Buffer.concat([
              Buffer.from("RIFF"),
              Buffer.alloc(4),
              Buffer.from("WEBPVP8 "),
              Buffer.alloc(40)
            ])
              .toString("base64"),
            mime_type: "image/webp"
          }
          const refused = yield* inbound(key, session.id, { from: FROM, [kind]: { ...file, caption: "hear this" } })
          assert.strictEqual(refused.status, 422, `${kind}: ${refused.text}`)
          assert.strictEqual(refused.body.error.code, "VALIDATION_ERROR")
          assert.deepStrictEqual(refused.body.error.details.issues[0].path, [kind], kind)
          assert.notInclude(refused.text, "hear this")
          const taken = yield* inbound(key, session.id, { from: FROM, [kind]: file })
          assert.strictEqual(taken.status, 202, `${kind}: ${taken.text}`)
        }
      }))
  })
})

const proxied = PgProxy.layer

describe.skipIf(testDatabaseUrl() === undefined)("the sandbox inbound answer while the database fails", () => {
  layer(Layer.merge(TestApp.layer({}, { database: proxied }), proxied), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.effect("names the message when the connection looking it up is killed as it answers: delivered once", () =>
      Effect.gen(function*() {
        const proxy = yield* PgProxy.Proxy
        const { key, session } = yield* sandboxSetup([FROM])
        // the first look-up of the delivered message loses its connection as the answer comes back
        const killed = proxy.dropOnStatement(/SELECT id FROM messages WHERE channel_id/i, { only: "that" })
        const reply = yield* inbound(key, session.id, { from: FROM, text: { body: "Outage test" } })
        yield* Effect.promise(() => killed).pipe(Effect.timeout("5 seconds"), Effect.orDie)
        assert.strictEqual(reply.status, 202, reply.text)
        const list = yield* request("GET", "/v1/messages?direction=inbound&limit=100", { token: key })
        const same = list.body.data.filter((m: { text: { body: string } }) => m.text.body === "Outage test")
        assert.deepStrictEqual(same.map((m: { id: string }) => m.id), [reply.body.message_id], "delivered once")
      }))
  })
})
