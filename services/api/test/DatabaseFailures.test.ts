/**
 * Which database failures a request answers with 503 (retry: nothing was changed) rather than a
 * 500: statements Postgres refused for a passing reason, whose transaction rolled back.
 */
import { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it } from "@effect/vitest"
import { isTransientDatabaseFailure } from "../src/DatabaseFailures.js"

const failure = (code: string, message: string) =>
  new SqlError({ cause: Object.assign(new Error(message), { code }), message: "Failed to execute statement" })

describe("transient database failures", () => {
  it("are deadlocks, serialization failures, unavailable locks and cancelled statements", () => {
    for (
      const [code, message] of [
        ["40P01", "deadlock detected"],
        ["40001", "could not serialize access due to concurrent update"],
        ["55P03", "could not obtain lock on row"],
        ["57014", "canceling statement due to user request"]
      ]
    ) {
      assert.isTrue(isTransientDatabaseFailure(failure(code!, message!)), code)
    }
  })

  it("are not constraint violations, syntax errors or other defects", () => {
    assert.isFalse(isTransientDatabaseFailure(failure("23505", "duplicate key value violates unique constraint")))
    assert.isFalse(isTransientDatabaseFailure(failure("42601", "syntax error")))
    assert.isFalse(isTransientDatabaseFailure(new Error("deadlock detected")))
    assert.isFalse(isTransientDatabaseFailure(undefined))
  })
})
