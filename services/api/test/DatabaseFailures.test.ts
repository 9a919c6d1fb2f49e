/**
 * Which database failures a request answers with 503 (retry: nothing was changed) rather than a
 * 500, and the handlers' services handing `DatabaseUnavailable` on as a defect.
 */
import { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it } from "@effect/vitest"
import { DatabaseUnavailable } from "@switchboard/db"
import { Cause, Effect, Exit, Option, Stream } from "effect"
import { isRefusedForNow, unavailableAsDefect, unavailableIn } from "../src/DatabaseFailures.js"

const failure = (code: string, message: string) =>
  new SqlError({ cause: Object.assign(new Error(message), { code }), message: "Failed to execute statement" })

describe("database failures at the API", () => {
  it("refused for now: deadlocks, serialization failures, unavailable locks and cancelled statements", () => {
    for (
      const [code, message] of [
        ["40P01", "deadlock detected"],
        ["40001", "could not serialize access due to concurrent update"],
        ["55P03", "could not obtain lock on row"],
        ["57014", "canceling statement due to user request"]
      ]
    ) {
      const unavailable = unavailableIn(failure(code!, message!))
      assert.isTrue(unavailable !== undefined && isRefusedForNow(unavailable), code)
      assert.isTrue(isRefusedForNow(DatabaseUnavailable.classify(failure(code!, message!))!), code)
    }
  })

  it("unreachable: a lost connection, a server shutting down", () => {
    for (const [code, message] of [["ECONNREFUSED", "connect ECONNREFUSED"], ["57P01", "terminating connection"]]) {
      const unavailable = unavailableIn(failure(code!, message!))
      assert.isTrue(unavailable !== undefined && !isRefusedForNow(unavailable), code)
    }
  })

  it("not passing: constraint violations, syntax errors and other defects", () => {
    assert.isUndefined(unavailableIn(failure("23505", "duplicate key value violates unique constraint")))
    assert.isUndefined(unavailableIn(failure("42601", "syntax error")))
    assert.isUndefined(unavailableIn(new Error("deadlock detected")))
    assert.isUndefined(unavailableIn(undefined))
  })

  it.effect("a service's DatabaseUnavailable reaches the error mapping as a defect; other values pass as they are", () =>
    Effect.gen(function*() {
      const unavailable = new DatabaseUnavailable.DatabaseUnavailable({ reason: "unreachable" })
      const service = unavailableAsDefect({
        find: (_id: string) => Effect.fail(unavailable),
        refuse: () => Effect.fail("not found" as const),
        stream: () => Stream.fail(unavailable),
        plain: (n: number) => Option.some(n + 1),
        constant: 3
      })
      const found = yield* Effect.exit(service.find("x"))
      assert.isTrue(Exit.isFailure(found) && Option.getOrUndefined(Cause.dieOption(found.cause)) === unavailable)
      assert.deepStrictEqual(yield* Effect.flip(service.refuse()), "not found")
      const streamed = yield* Effect.exit(Stream.runDrain(service.stream()))
      assert.isTrue(Exit.isFailure(streamed) && Cause.isDie(streamed.cause))
      assert.deepStrictEqual(service.plain(1), Option.some(2))
      assert.strictEqual(service.constant, 3)
    }))
})
