/**
 * A text that reaches a reader needs a visible character, whatever the door (docs/API.md
 * "Messages", "Templates"): a send's and a conversation reply's `text.body`, a simulated inbound
 * text or edit, a template's body and its rendered text, as a call policy's `reply_text` already
 * did (`Characters.visibleText`, one rule). Whitespace, zero-width and other invisible characters
 * alone are 422 `VALIDATION_ERROR` at the member, never echoed; nothing is sent or recorded.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, refused, request, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"

/**
 * The refusal of a call that must be refused; an acceptance fails the test with a plain message
 * rather than with the accepted record as its error.
 */
const mustRefuse = <A, E, R>(call: Effect.Effect<A, E, R>) =>
  refused(Effect.zipRight(call, Effect.dieMessage("accepted, where a refusal was expected")))

/** Texts a reader sees as nothing: spaces, tabs, newlines, no-break and ideographic spaces, zero-width characters, the Hangul filler, the braille blank, a soft hyphen with a word joiner. */
const BLANKS = [" ", " \n\t ", "\u00a0\u3000", "\u200b", "\u3164\u3164", "\u2800", "\u00ad\u2060"]

describe("a text body needs a visible character at every door", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refuses a send, a reply and a sandbox inbound text or edit of invisible characters alone", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([TO])
        const client = yield* api(key)
        // spaces around a visible character are part of the text, kept as sent
        const first = yield* client.messages.send({ payload: { to: TO, text: { body: " hi " } }, headers: {} })
        assert.strictEqual(first.text.body, " hi ")
        const refusedAt = (reply: { status: number; body: any; text: string }, path: ReadonlyArray<string>) => {
          assert.strictEqual(reply.status, 422, reply.text)
          assert.strictEqual(reply.body.error.code, "VALIDATION_ERROR")
          const issue = reply.body.error.details.issues[0]
          assert.deepStrictEqual(issue.path, path)
          assert.strictEqual(issue.message, "Expected text, not only whitespace or invisible characters")
        }
        for (const blank of BLANKS) {
          const label = JSON.stringify(blank)
          // the typed client holds the same rule: refused before it is sent
          const local = yield* mustRefuse(
            client.messages.send({ payload: { to: TO, text: { body: blank } }, headers: {} })
          )
          assert.strictEqual(local.status, 422, label)
          assert.strictEqual(local.code, "VALIDATION_ERROR", label)
          assert.strictEqual(local.details["sent"], false, label)
          assert.deepStrictEqual(local.details["issues"][0].path, ["text", "body"], label)
          // raw: the server's own answer to what the typed client would not send
          refusedAt(
            yield* request("POST", "/v1/messages", { token: key, body: { to: TO, text: { body: blank } } }),
            ["text", "body"]
          )
          refusedAt(
            yield* request("POST", `/v1/conversations/${first.conversation_id}/messages`, {
              token: key,
              body: { text: { body: blank } }
            }),
            ["text", "body"]
          )
          refusedAt(
            yield* request("POST", `/v1/sandbox/sessions/${session.id}/inbound`, {
              token: key,
              body: { from: TO, text: { body: blank } }
            }),
            ["text", "body"]
          )
          refusedAt(
            yield* request("POST", `/v1/sandbox/sessions/${session.id}/inbound`, {
              token: key,
              body: { from: TO, edit: { message_id: first.id, text: { body: blank } } }
            }),
            ["edit", "text", "body"]
          )
        }
        // nothing was sent or recorded but the first text
        const all = yield* client.messages.list({ urlParams: {} })
        assert.deepStrictEqual(all.data.map((m) => m.id), [first.id])
      }))

    it.effect("refuses a template whose body, or whose rendered text, has no visible character", () =>
      Effect.gen(function*() {
        const { key } = yield* sandboxSetup([TO])
        const client = yield* api(key)
        for (const [i, blank] of BLANKS.entries()) {
          const reply = yield* mustRefuse(client.templates.create({
            payload: { slug: `blank_${i}`, name: "Blank", category: "utility", body: blank }
          }))
          assert.strictEqual(reply.status, 422, JSON.stringify(blank))
          assert.strictEqual(reply.details["reason"], "invalid_template")
          assert.deepStrictEqual(reply.details["issues"], [{
            path: ["body"],
            message: "Expected text, not only whitespace or invisible characters"
          }])
        }
        // a body of placeholders alone renders blank when its values are blank or left out
        yield* client.templates.create({
          payload: {
            slug: "greeting",
            name: "Greeting",
            category: "utility",
            body: "{{greeting}}{{name}}",
            variables: [{ name: "greeting" }, { name: "name", required: false }]
          }
        })
        const blankValue = yield* mustRefuse(client.messages.send({
          payload: { to: TO, template: { slug: "greeting", variables: { greeting: "\u00a0 \u200b" } } },
          headers: {}
        }))
        assert.strictEqual(blankValue.status, 422)
        assert.strictEqual(blankValue.code, "VALIDATION_ERROR")
        assert.strictEqual(blankValue.details["reason"], "invalid_template_variables")
        assert.deepStrictEqual(blankValue.details["issues"][0].path, ["template", "variables"])
        assert.notInclude(JSON.stringify(blankValue), "\u200b")
        const sent = yield* client.messages.send({
          payload: { to: TO, template: { slug: "greeting", variables: { greeting: "Hello", name: " Ada" } } },
          headers: {}
        })
        assert.strictEqual(sent.text.body, "Hello Ada")
        const all = yield* client.messages.list({ urlParams: {} })
        assert.deepStrictEqual(all.data.map((m) => m.id), [sent.id])
      }))
  })
})
