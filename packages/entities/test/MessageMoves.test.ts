/**
 * Receipts reported together are written in rounds: each message at most once per statement, its
 * later receipts in the next round, so they apply in the order the provider reported them.
 */
import { SqlClient } from "@effect/sql"
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

    it.effect("records the provider's acceptances in the same statement as receipts: no event, no sent time", () =>
      Effect.gen(function*() {
        const moves = yield* MessageMoves.MessageMoves
        const sql = yield* SqlClient.SqlClient
        const target = yield* setupChannel()
        const a = yield* queueMessage(target, { to: "+4915112340003" })
        const b = yield* queueMessage(target, { to: "+4915112340004" })
        for (const id of [a.id, b.id]) assert.isTrue(yield* moves.move(id, "dispatching"))
        const at = Date.now() - 1_000
        const moved = yield* moves.receipts([
          { messageId: a.id, status: "provider_accepted", at },
          { messageId: b.id, status: "provider_accepted", at },
          { messageId: b.id, status: "sent", at: at + 1 },
          { messageId: a.id, status: "provider_accepted", at } // repeated: ignored
        ])
        assert.strictEqual(moved, 3)
        assert.deepStrictEqual((yield* timeline(a.id)).map((t) => t.to_state).slice(-2), [
          "dispatching",
          "provider_accepted"
        ])
        assert.deepStrictEqual((yield* timeline(b.id)).map((t) => t.to_state).slice(-2), ["provider_accepted", "sent"])
        // an acceptance reports no event of its own; the receipt does
        const reported = (id: string) =>
          Effect.map(eventTypes(id), (events) => events.map((e) => e.type).filter((t) => t !== "message.queued"))
        assert.deepStrictEqual(yield* reported(a.id), [])
        assert.deepStrictEqual(yield* reported(b.id), ["message.sent"])
        const rows = yield* sql<{ id: string; status: string; sent_at: Date | null }>`
          SELECT id, status, sent_at FROM messages WHERE id IN (${a.id}, ${b.id}) ORDER BY id`.pipe(Effect.orDie)
        const byId = new Map(rows.map((r) => [r.id, r]))
        assert.strictEqual(byId.get(a.id)!.status, "provider_accepted")
        assert.isNull(byId.get(a.id)!.sent_at, "accepted is not sent")
        assert.strictEqual(new Date(byId.get(b.id)!.sent_at!).getTime(), at + 1)
      }))
  })
})
