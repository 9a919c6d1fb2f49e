import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import { newId } from "@switchboard/domain"
import { Effect, Either, Layer, Ref, Schema } from "effect"
import { fingerprint, Idempotency } from "../src/services/Idempotency.js"

const TestLayer = Idempotency.Default.pipe(Layer.provideMerge(TestDatabase.sqlLayer))

/** A response whose wire form differs from its type: a replay must decode it, not hand back JSON. */
const Receipt = Schema.Struct({ id: Schema.String, at: Schema.DateFromString, total: Schema.NumberFromString })

const receipt = (id: string) => ({ id, at: new Date("2026-01-02T03:04:05.000Z"), total: 42 })

describe("Idempotency.run", () => {
  layer(TestLayer, { timeout: 120_000 })((it) => {
    /** A use-case that counts its runs and stores its response in its own transaction. */
    const counted =
      (runs: Ref.Ref<number>, id: string) => (complete: (r: typeof Receipt.Type) => Effect.Effect<void>) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* Ref.update(runs, (n) => n + 1)
          return yield* sql.withTransaction(Effect.gen(function*() {
            const response = receipt(id)
            yield* complete(response)
            return response
          })).pipe(Effect.orDie)
        })

    it.effect("replays a generic response decoded from its stored wire form, without running again", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const workspaceId = yield* newId("ws")
        const runs = yield* Ref.make(0)
        const request = { workspaceId, key: "k1", body: { a: 1, b: [1, 2] }, response: Receipt }
        const first = yield* idempotency.run(request, counted(runs, "r1"))
        const again = yield* idempotency.run({ ...request, body: { b: [1, 2], a: 1 } }, counted(runs, "r2"))
        assert.deepStrictEqual(again, first)
        assert.instanceOf(again.at, Date)
        assert.strictEqual(yield* Ref.get(runs), 1)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ fingerprint: string; response: unknown }>`SELECT fingerprint, response
          FROM idempotency_keys WHERE workspace_id = ${workspaceId} AND key = 'k1'`
        assert.strictEqual(rows[0]!.fingerprint, fingerprint({ a: 1, b: [1, 2] }))
        const stored = typeof rows[0]!.response === "string" ? JSON.parse(rows[0]!.response) : rows[0]!.response
        assert.deepStrictEqual(stored, { id: "r1", at: "2026-01-02T03:04:05.000Z", total: "42" })
      }))

    it.effect("frees the key when the use-case fails or dies, so a retry with another body runs", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const workspaceId = yield* newId("ws")
        const runs = yield* Ref.make(0)
        const failed = yield* idempotency.run(
          { workspaceId, key: "k2", body: { try: 1 }, response: Receipt },
          () => Effect.fail("refused" as const)
        ).pipe(Effect.either)
        assert.deepStrictEqual(failed, Either.left("refused"))
        const died = yield* idempotency.run(
          { workspaceId, key: "k2", body: { try: 2 }, response: Receipt },
          () => Effect.dieMessage("boom")
        ).pipe(Effect.exit)
        assert.isTrue(died._tag === "Failure")
        const ok = yield* idempotency.run(
          { workspaceId, key: "k2", body: { try: 3 }, response: Receipt },
          counted(runs, "r3")
        )
        assert.strictEqual(ok.id, "r3")
        assert.strictEqual(yield* Ref.get(runs), 1)
      }))

    it.effect("stores nothing when the transaction that completed rolls back", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const sql = yield* SqlClient.SqlClient
        const workspaceId = yield* newId("ws")
        const request = { workspaceId, key: "k3", body: { x: 1 }, response: Receipt }
        const rolledBack = yield* idempotency.run(request, (complete) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* complete(receipt("lost"))
            return yield* Effect.fail("after complete" as const)
          })).pipe(Effect.catchTag("SqlError", Effect.die))).pipe(Effect.either)
        assert.deepStrictEqual(rolledBack, Either.left("after complete"))
        const runs = yield* Ref.make(0)
        const retried = yield* idempotency.run(request, counted(runs, "kept"))
        assert.strictEqual(retried.id, "kept", "the rolled-back response was not replayed")
        assert.strictEqual(yield* Ref.get(runs), 1)
      }))

    it.effect("answers 409 for another body, and runs every time without a key", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const workspaceId = yield* newId("ws")
        const runs = yield* Ref.make(0)
        yield* idempotency.run({ workspaceId, key: "k4", body: { n: 1 }, response: Receipt }, counted(runs, "a"))
        const conflict = yield* idempotency.run(
          { workspaceId, key: "k4", body: { n: 2 }, response: Receipt },
          counted(runs, "b")
        ).pipe(Effect.flip)
        assert.strictEqual(conflict._tag, "IdempotencyConflict")
        assert.deepStrictEqual(conflict.details, { reason: "fingerprint_mismatch" })
        // the same key in another workspace is another key
        const other = yield* idempotency.run(
          { workspaceId: yield* newId("ws"), key: "k4", body: { n: 2 }, response: Receipt },
          counted(runs, "c")
        )
        assert.strictEqual(other.id, "c")
        for (const id of ["d", "e"]) {
          yield* idempotency.run({ workspaceId, key: undefined, body: { n: 1 }, response: Receipt }, counted(runs, id))
        }
        assert.strictEqual(yield* Ref.get(runs), 4)
        const sql = yield* SqlClient.SqlClient
        const keys = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_keys
          WHERE workspace_id = ${workspaceId}`
        assert.strictEqual(keys[0]!.n, 1)
      }))
  })
})
