/**
 * Marking inbound messages read (docs/API.md "Conversations"): `POST /v1/messages/{id}/read` marks the
 * message and every unread inbound one before it (`read_at`), moves the conversation's marker up
 * to it and no further; idempotent; 409 on an outbound message. The conversation read route marks
 * all of them. Through the sandbox and the typed client.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { api, eventually, refused, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const FROM = "+4915112345678"

describe("marking inbound messages read", () => {
  layer(TestApp.layer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect("marks a message and the unread ones before it, moves the marker no further, and is idempotent", () =>
      Effect.gen(function*() {
        const { key, session } = yield* sandboxSetup([FROM])
        const client = yield* api(key)
        const ours = yield* client.messages.send({ payload: { to: FROM, text: { body: "hello" } }, headers: {} })
        for (const body of ["one", "two", "three"]) {
          yield* client.sandbox.inbound({ path: { sessionId: session.id }, payload: { from: FROM, text: { body } } })
          // one at a time, so their order is the order sent
          yield* eventually(
            client.messages.list({ urlParams: { direction: "inbound" } }),
            (p) => p.data.some((m) => m.text.body === body)
          )
        }
        const inbound = (yield* client.messages.list({ urlParams: { direction: "inbound" } })).data
        const [three, two, one] = inbound
        assert.deepStrictEqual([one!.text.body, two!.text.body, three!.text.body], ["one", "two", "three"])
        assert.isNull(two!.read_at)

        const read = yield* client.messages.markRead({ path: { messageId: two!.id } })
        assert.strictEqual(read.id, two!.id)
        assert.isNotNull(read.read_at)
        const afterOne = yield* client.messages.get({ path: { messageId: one!.id } })
        assert.isNotNull(afterOne.read_at)
        const stillUnread = yield* client.messages.get({ path: { messageId: three!.id } })
        assert.isNull(stillUnread.read_at)
        const conversation = yield* client.conversations.get({ path: { conversationId: two!.conversation_id } })
        assert.strictEqual(conversation.unread_count, 1)

        // idempotent: nothing moves again
        const again = yield* client.messages.markRead({ path: { messageId: two!.id } })
        assert.strictEqual(again.read_at, read.read_at)
        assert.strictEqual(
          (yield* client.conversations.get({ path: { conversationId: two!.conversation_id } })).unread_count,
          1
        )

        // the conversation's read route marks every inbound message
        const all = yield* client.conversations.markRead({ path: { conversationId: two!.conversation_id } })
        assert.strictEqual(all.unread_count, 0)
        assert.isNotNull((yield* client.messages.get({ path: { messageId: three!.id } })).read_at)
        // an earlier message named later does not move the marker back
        yield* client.messages.markRead({ path: { messageId: one!.id } })
        assert.strictEqual(
          (yield* client.conversations.get({ path: { conversationId: two!.conversation_id } })).unread_count,
          0
        )

        const outbound = yield* refused(client.messages.markRead({ path: { messageId: ours.id } }))
        assert.strictEqual(outbound.status, 409)
        assert.strictEqual(outbound.code, "CONFLICT")
        assert.strictEqual(outbound.details["reason"], "outbound_message")
        const unknown = yield* refused(
          client.messages.markRead({ path: { messageId: "msg_01M8C0CKK1C4DQBQCK3594RW0W" as `msg_${string}` } })
        )
        assert.strictEqual(unknown.status, 404)
      }))
  })
})
