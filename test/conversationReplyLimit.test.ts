import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { thread } from "./support/Conversations.js"
import { refused } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

// rate limits are off outside production; this file turns them on with a small reply limit
process.env["RATE_LIMITS"] = "on"
process.env["RATE_LIMIT_CONVERSATION_REPLY"] = "2/1 minute"

describe("the conversation_reply rate limit", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("counts replies in their own rule, apart from POST /v1/messages", () =>
      Effect.gen(function*() {
        const { client, conversationId } = yield* thread
        const path = { conversationId }
        const reply = () => client.conversations.reply({ path, payload: { text: { body: "hi" } }, headers: {} })
        yield* reply()
        yield* reply()
        const limited = yield* refused(reply())
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.code, "RATE_LIMITED")
        assert.strictEqual(limited.details["rule"], "conversation_reply")
        const sent = yield* client.messages.send({
          payload: { to: "+4915112345678", text: { body: "x" } },
          headers: {}
        })
        assert.strictEqual(sent.status, "queued")
      }))
  })
})
