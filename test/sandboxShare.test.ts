/**
 * The shared sandbox pool is shared (docs/LIMITS.md "Sandbox"): one workspace holds at most half
 * of its numbers, whatever its plan says (`unlimited` included), and when every number is held the
 * 503 says when the first one frees up (`details.retry_at` and `Retry-After`).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Operator } from "@switchboard/service-api"
import { Effect } from "effect"
import { createKey, request, signUp } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

/** A pool of four numbers: a workspace's share is two. */
const POOL = ["+15550401001", "+15550401002", "+15550401003", "+15550401004"]

const workspaceKey = (plan?: "enterprise") =>
  Effect.gen(function*() {
    const user = yield* signUp()
    if (plan !== undefined) {
      yield* Effect.flatMap(Operator.Operator, (o) => o.setPlan(user.workspaceId, plan)).pipe(
        Effect.provide(TestApp.operatorLayer)
      )
    }
    return (yield* createKey(user, { mode: "test" })).secret
  })

// raw: the refusals' headers and whole bodies are what these tests read
const allocate = (key: string) => request("POST", "/v1/sandbox/sessions", { token: key })

describe("the shared sandbox pool", () => {
  layer(TestApp.layer({}, { providers: { sandboxNumbers: POOL } }), { excludeTestServices: true, timeout: 120_000 })(
    (it) => {
      it.effect("an unlimited plan holds half of the pool, and the 503 says when a number frees up", () =>
        Effect.gen(function*() {
          const unlimited = yield* workspaceKey("enterprise")
          const held: Array<string> = []
          for (let i = 0; i < 2; i++) {
            const reply = yield* allocate(unlimited)
            assert.strictEqual(reply.status, 201, reply.text)
            held.push(reply.body.expires_at)
          }
          const third = yield* allocate(unlimited)
          assert.strictEqual(third.status, 409, third.text)
          assert.strictEqual(third.body.error.code, "ENTITLEMENT_LIMIT_REACHED")
          assert.deepStrictEqual(third.body.error.details, {
            entitlement: "shared_test_sessions",
            limit: 2,
            used: 2,
            reason: "pool_share",
            pool_size: 4
          })
          assert.include(third.body.error.message, "at most 2 shared test sessions at a time")
          assert.include(third.body.error.message, "DELETE /v1/sandbox/sessions/{id}")

          // two other workspaces take the rest of the pool
          const others = [yield* workspaceKey(), yield* workspaceKey()]
          for (const key of others) assert.strictEqual((yield* allocate(key)).status, 201)
          const late = yield* allocate(yield* workspaceKey())
          assert.strictEqual(late.status, 503, late.text)
          assert.strictEqual(late.body.error.code, "SANDBOX_NO_NUMBER_AVAILABLE")
          // the first number to free up is the first session's, 72 h after it was created
          assert.strictEqual(late.body.error.details.retry_at, held[0])
          assert.strictEqual(late.body.error.details.pool_size, 4)
          const seconds = Number(late.headers["retry-after"])
          assert.strictEqual(seconds, late.body.error.details.retry_after_seconds)
          assert.isAbove(seconds, 71 * 3600)
          assert.isAtMost(seconds, 72 * 3600)
          assert.include(late.body.error.message, held[0]!)

          // a plan's own lower limit is judged first, in the plan's words
          const again = yield* allocate(others[0]!)
          assert.strictEqual(again.status, 409, again.text)
          assert.deepStrictEqual(again.body.error.details, { entitlement: "shared_test_sessions", limit: 1, used: 1 })
          assert.match(
            again.body.error.message,
            /^The plan allows 1 shared test session at a time; end a session with DELETE /
          )
        }))
    }
  )
})
