import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { DatabaseUnavailable, IdempotencyRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids } from "@switchboard/domain"
import { Duration, Effect, Either, Fiber, Layer, Ref, Schema, TestClock } from "effect"
import { CLAIM_LEASE_MS, type Complete, fingerprint, Idempotency } from "../src/services/Idempotency.js"

const TestLayer = Layer.merge(Idempotency.Default, IdempotencyRepo.IdempotencyRepo.Default).pipe(
  Layer.provideMerge(TestDatabase.sqlLayer)
)

/** A response whose wire form differs from its type: a replay must decode it, not hand back JSON. */
const Receipt = Schema.Struct({ id: Schema.String, at: Schema.DateFromString, total: Schema.NumberFromString })

const receipt = (id: string) => ({ id, at: new Date("2026-01-02T03:04:05.000Z"), total: 42 })

describe("Idempotency.run", () => {
  layer(TestLayer, { timeout: 120_000 })((it) => {
    /** A use-case that counts its runs and stores its response in its own transaction. */
    const counted = (runs: Ref.Ref<number>, id: string) => (complete: Complete<typeof Receipt.Type>) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Ref.update(runs, (n) => n + 1)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const response = receipt(id)
          yield* complete(response)
          return response
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      })

    it.effect("replays a generic response decoded from its stored wire form, without running again", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const workspaceId = yield* Ids.newId("ws")
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
        const workspaceId = yield* Ids.newId("ws")
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
        const workspaceId = yield* Ids.newId("ws")
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
        const workspaceId = yield* Ids.newId("ws")
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
          { workspaceId: yield* Ids.newId("ws"), key: "k4", body: { n: 2 }, response: Receipt },
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
    it.effect("a key whose request died is free again once its lease ends, not before", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const repo = yield* IdempotencyRepo.IdempotencyRepo
        const workspaceId = yield* Ids.newId("ws")
        const body = { to: "+4915112345678" }
        // a process claims the key and dies: nobody renews or releases it
        const claimedAt = Date.parse("2026-03-01T10:00:00.000Z")
        yield* TestClock.setTime(claimedAt)
        yield* repo.begin({
          workspaceId,
          key: "died",
          claimId: "dead-request",
          fingerprint: fingerprint(body),
          now: new Date(claimedAt).toISOString(),
          expiresAt: new Date(claimedAt + 86_400_000).toISOString(),
          leaseUntil: new Date(claimedAt + CLAIM_LEASE_MS).toISOString()
        })
        const runs = yield* Ref.make(0)
        const request = { workspaceId, key: "died", body, response: Receipt }
        yield* TestClock.adjust(Duration.millis(CLAIM_LEASE_MS - 1_000))
        const early = yield* idempotency.run(request, counted(runs, "early")).pipe(Effect.flip)
        assert.deepStrictEqual(early.details, { reason: "in_progress" })
        yield* TestClock.adjust(Duration.millis(2_000))
        const retried = yield* idempotency.run(request, counted(runs, "retried"))
        assert.strictEqual(retried.id, "retried")
        assert.strictEqual(yield* Ref.get(runs), 1)
      }))

    it.effect("a request that runs longer than a lease keeps its key by renewing it", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const workspaceId = yield* Ids.newId("ws")
        yield* TestClock.setTime(Date.parse("2026-03-02T10:00:00.000Z"))
        const runs = yield* Ref.make(0)
        const request = { workspaceId, key: "slow", body: { n: 1 }, response: Receipt }
        const slow = yield* idempotency.run(
          request,
          (complete) =>
            Effect.zipRight(Effect.sleep(Duration.millis(CLAIM_LEASE_MS * 3)), counted(runs, "slow")(complete))
        ).pipe(Effect.fork)
        for (let i = 0; i < 5; i++) {
          yield* TestClock.adjust(Duration.millis(CLAIM_LEASE_MS / 2))
          const meanwhile = yield* idempotency.run(request, counted(runs, "retry")).pipe(Effect.flip)
          assert.deepStrictEqual(
            meanwhile.details,
            { reason: "in_progress" },
            `after ${(i + 1) * CLAIM_LEASE_MS / 2} ms`
          )
        }
        yield* TestClock.adjust(Duration.millis(CLAIM_LEASE_MS))
        assert.strictEqual((yield* Fiber.join(slow)).id, "slow")
        const replayed = yield* idempotency.run(request, counted(runs, "after"))
        assert.strictEqual(replayed.id, "slow")
        assert.strictEqual(yield* Ref.get(runs), 1)
      }))

    it.effect("a request that lost its claim to a retry writes nothing and answers 409 in_progress", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const sql = yield* SqlClient.SqlClient
        const workspaceId = yield* Ids.newId("ws")
        yield* sql`CREATE TABLE IF NOT EXISTS idempotency_test_effects (workspace_id text, note text)`
        const request = { workspaceId, key: "stalled", body: { n: 1 }, response: Receipt }
        const lost = yield* idempotency.run(request, (complete) =>
          Effect.gen(function*() {
            // meanwhile a retry took the key over (this request stalled past its lease)
            yield* sql`UPDATE idempotency_keys SET claim_id = 'the-retry' WHERE workspace_id = ${workspaceId}`
            return yield* sql.withTransaction(Effect.gen(function*() {
              yield* sql`INSERT INTO idempotency_test_effects VALUES (${workspaceId}, 'stalled')`
              yield* complete(receipt("stalled"))
              return receipt("stalled")
            }))
          }).pipe(Effect.catchTag("SqlError", Effect.die))).pipe(Effect.flip)
        assert.strictEqual(lost._tag, "IdempotencyConflict")
        assert.deepStrictEqual(lost.details, { reason: "in_progress" })
        const effects = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_test_effects
          WHERE workspace_id = ${workspaceId}`
        assert.strictEqual(effects[0]!.n, 0, "its work rolled back")
        const keys = yield* sql<{ claim_id: string; state: string }>`SELECT claim_id, state FROM idempotency_keys
          WHERE workspace_id = ${workspaceId}`
        assert.deepStrictEqual(
          keys.map((k) => [k.claim_id, k.state]),
          [["the-retry", "running"]],
          "the retry's claim stays"
        )
      }))
  })
})

/**
 * What the next renewals of the lease meet, in order: a defect (a lost connection before
 * `DatabaseUnavailable` existed), a passing failure, a renewal that never answers, or nothing.
 */
const renewalFaults: Array<"defect" | "unavailable" | "hang" | "pass"> = []
let renewals = 0

const FlakyRenewals = Layer.effect(
  IdempotencyRepo.IdempotencyRepo,
  Effect.map(IdempotencyRepo.IdempotencyRepo, (real) =>
    IdempotencyRepo.IdempotencyRepo.make({
      ...real,
      renew: (claim, leaseUntil) =>
        Effect.suspend(() => {
          renewals++
          const fault = renewalFaults.shift()
          if (fault === "defect") return Effect.die(new Error("Connection terminated unexpectedly (injected)"))
          if (fault === "unavailable") {
            return Effect.fail(new DatabaseUnavailable.DatabaseUnavailable({ reason: "unreachable" }))
          }
          if (fault === "hang") return Effect.never
          return real.renew(claim, leaseUntil)
        })
    }))
).pipe(Layer.provideMerge(IdempotencyRepo.IdempotencyRepo.Default))

const FlakyLayer = Idempotency.DefaultWithoutDependencies.pipe(
  Layer.provideMerge(FlakyRenewals),
  Layer.provideMerge(TestDatabase.sqlLayer)
)

describe("Idempotency.run when renewals fail", () => {
  layer(FlakyLayer, { timeout: 120_000 })((it) => {
    it.effect("keeps the key through failed renewals: a retry meanwhile is refused, the request runs once", () =>
      Effect.gen(function*() {
        const idempotency = yield* Idempotency
        const sql = yield* SqlClient.SqlClient
        const workspaceId = yield* Ids.newId("ws")
        yield* TestClock.setTime(Date.parse("2026-03-03T10:00:00.000Z"))
        const runs = yield* Ref.make(0)
        const request = { workspaceId, key: "flaky", body: { n: 1 }, response: Receipt }
        const use = (id: string) => (complete: Complete<typeof Receipt.Type>) =>
          Effect.gen(function*() {
            yield* Ref.update(runs, (n) => n + 1)
            return yield* sql.withTransaction(Effect.gen(function*() {
              yield* complete(receipt(id))
              return receipt(id)
            })).pipe(Effect.catchTag("SqlError", Effect.die))
          })
        // the first renewal dies, the second fails, the fourth hangs: the others must still come
        renewalFaults.push("defect", "unavailable", "pass", "hang")
        const slow = yield* idempotency.run(
          request,
          (complete) => Effect.zipRight(Effect.sleep(Duration.millis(CLAIM_LEASE_MS * 4)), use("slow")(complete))
        ).pipe(Effect.fork)
        for (let i = 0; i < 7; i++) {
          yield* TestClock.adjust(Duration.millis(CLAIM_LEASE_MS / 2))
          const meanwhile = yield* idempotency.run(request, use("retry")).pipe(Effect.flip)
          assert.deepStrictEqual(
            meanwhile.details,
            { reason: "in_progress" },
            `after ${(i + 1) * CLAIM_LEASE_MS / 2} ms`
          )
        }
        yield* TestClock.adjust(Duration.millis(CLAIM_LEASE_MS))
        assert.strictEqual((yield* Fiber.join(slow)).id, "slow")
        assert.strictEqual(yield* Ref.get(runs), 1, "the request ran once")
        assert.isAtLeast(renewals, 6, "renewals went on after the failed ones")
        assert.deepStrictEqual(renewalFaults, [])
      }))
  })
})
