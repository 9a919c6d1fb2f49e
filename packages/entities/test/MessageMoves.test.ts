/**
 * Receipts reported together are written in rounds: each message at most once per statement, its
 * later receipts in the next round, so they apply in the order the provider reported them.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { MessageMoves } from "@switchboard/entities"
import { ProvidersConfig } from "@switchboard/providers"
import { Effect, Layer } from "effect"
import { EntityRepos, eventTypes, queueMessage, setupChannel, timeline } from "./support.js"

const TestLayer = MessageMoves.MessageMoves.Default.pipe(
  Layer.provideMerge(EntityRepos),
  Layer.provideMerge(ProvidersConfig.layer({})),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

describe("MessageMoves.receipts", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("applies a batch in the order reported, a message's receipts one round each", () =>
      Effect.gen(function*() {
        const moves = yield* MessageMoves.MessageMoves
        const target = yield* setupChannel()
        const a = yield* queueMessage(target, { to: "+4915112340001" })
        const b = yield* queueMessage(target, { to: "+4915112340002" })
        for (const id of [a.id, b.id]) {
          assert.isTrue(yield* moves.move(id, "dispatching"))
          assert.isTrue(yield* moves.move(id, "provider_accepted"))
        }
        const at = Date.now() - 1_000
        const moved = yield* moves.receipts([
          { messageId: a.id, status: "sent", at },
          { messageId: a.id, status: "delivered", at: at + 1 },
          { messageId: b.id, status: "sent", at },
          { messageId: a.id, status: "read", at: at + 2 },
          { messageId: b.id, status: "sent", at } // repeated: ignored
        ])
        assert.strictEqual(moved, 4)
        const steps = (yield* timeline(a.id)).map((t) => `${t.from_state}->${t.to_state}`)
        assert.deepStrictEqual(steps.slice(-3), ["provider_accepted->sent", "sent->delivered", "delivered->read"])
        assert.deepStrictEqual((yield* timeline(b.id)).map((t) => t.to_state).slice(-1), ["sent"])
        assert.deepStrictEqual(
          (yield* eventTypes(a.id)).map((e) => e.type).filter((t) => t !== "message.queued"),
          ["message.sent", "message.delivered", "message.read"]
        )
        // a receipt that came before it was sent (out of order) does not move it back
        assert.strictEqual(yield* moves.receipts([{ messageId: a.id, status: "sent", at }]), 0)
      }))
  })
})
