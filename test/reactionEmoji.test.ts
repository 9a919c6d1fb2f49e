/**
 * A reaction carries one emoji or "" (docs/API.md "Messages"): text, a space, a noncharacter or
 * two emojis are 422 at `reaction.emoji`, on a send and on a simulated inbound reaction alike.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, request, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const TO = "+4915112345678"
const REFUSED = ["abc", " ", "\uffff", "👍👍", "1"]

describe("reaction emoji", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("accepts one emoji or an empty string and refuses anything else", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([TO])
        const client = yield* api(key)
        const first = yield* client.messages.send({ payload: { to: TO, text: { body: "hello" } }, headers: {} })
        for (const emoji of ["👨‍👩‍👧", "🇩🇪", "👍🏽", ""]) {
          const reacted = yield* client.messages.send({
            payload: { to: TO, reaction: { message_id: first.id, emoji } },
            headers: {}
          })
          assert.strictEqual(reacted.reaction?.emoji, emoji)
        }
        for (const emoji of REFUSED) {
          // raw: values the typed client's schema would refuse before sending
          const sent = yield* request("POST", "/v1/messages", {
            token: key,
            body: { to: TO, reaction: { message_id: first.id, emoji } }
          })
          assert.strictEqual(sent.status, 422, `${JSON.stringify(emoji)}: ${sent.text}`)
          assert.deepStrictEqual(sent.body.error.details.issues, [{
            path: ["reaction", "emoji"],
            message: "Expected one emoji, or \"\" to remove the reaction"
          }])
          // raw: the same on a simulated inbound reaction
          const inbound = yield* request("POST", `/v1/sandbox/sessions/${session.id}/inbound`, {
            token: key,
            body: { from: TO, reaction: { message_id: first.id, emoji } }
          })
          assert.strictEqual(inbound.status, 422, `${JSON.stringify(emoji)}: ${inbound.text}`)
          assert.deepStrictEqual(inbound.body.error.details.issues[0].path, ["reaction", "emoji"])
        }
      }))
  })
})
