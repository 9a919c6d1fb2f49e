/**
 * Which database failures are passing (`DatabaseUnavailable`, retried by the runner, 503 at the
 * API) and which are bugs (a defect): the classifier's table, then failures the real driver and
 * the real database produce, and the repo boundary (`Rows.dieOnDatabaseError`).
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it, layer } from "@effect/vitest"
import { DatabaseUnavailable, Rows } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Cause, Effect, Exit, Option } from "effect"
import { createServer } from "node:net"
import pg from "pg"

const driverError = (message: string, code?: string) =>
  Object.assign(new Error(message), code === undefined ? {} : { code })

const statementFailure = (message: string, code?: string) =>
  new SqlError({ cause: driverError(message, code), message: "Failed to execute statement" })

/** [SQLSTATE or driver code, the driver's message, what it is] */
const TABLE: ReadonlyArray<readonly [string | undefined, string, DatabaseUnavailable.Reason | "defect"]> = [
  // class 08: connection exceptions
  ["08000", "connection exception", "unreachable"],
  ["08001", "could not connect to server", "unreachable"],
  ["08003", "connection does not exist", "unreachable"],
  ["08006", "connection failure", "unreachable"],
  ["08P01", "protocol violation", "unreachable"],
  // shutting down or starting
  ["57P01", "terminating connection due to administrator command", "shutting_down"],
  ["57P02", "terminating connection due to crash of another server process", "shutting_down"],
  ["57P03", "the database system is starting up", "shutting_down"],
  ["57P05", "terminating connection due to idle-session timeout", "unreachable"],
  ["25P03", "terminating connection due to idle-in-transaction timeout", "unreachable"],
  // class 53: insufficient resources
  ["53300", "sorry, too many clients already", "overloaded"],
  ["53000", "insufficient resources", "overloaded"],
  ["53100", "could not extend file: No space left on device", "overloaded"],
  ["53200", "out of memory", "overloaded"],
  // class 40: transaction rollback
  ["40001", "could not serialize access due to concurrent update", "conflict"],
  ["40P01", "deadlock detected", "conflict"],
  ["40000", "transaction rollback", "conflict"],
  // cancelled: statement timeout, lock timeout
  ["57014", "canceling statement due to statement timeout", "cancelled"],
  ["55P03", "canceling statement due to lock timeout", "cancelled"],
  // Node's socket errors
  ["ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432", "unreachable"],
  ["ECONNRESET", "read ECONNRESET", "unreachable"],
  ["ETIMEDOUT", "connect ETIMEDOUT 10.0.0.1:5432", "unreachable"],
  ["EPIPE", "write EPIPE", "unreachable"],
  ["EHOSTUNREACH", "connect EHOSTUNREACH", "unreachable"],
  ["EAI_AGAIN", "getaddrinfo EAI_AGAIN db", "unreachable"],
  // the pg driver's own words, no code
  [undefined, "Connection terminated unexpectedly", "unreachable"],
  [undefined, "Connection terminated", "unreachable"],
  [undefined, "Connection terminated due to connection timeout", "unreachable"],
  [undefined, "timeout exceeded when trying to connect", "unreachable"],
  [undefined, "Client has encountered a connection error and is not queryable", "unreachable"],
  [undefined, "Client was closed and is not queryable", "unreachable"],
  [undefined, "Query read timeout", "unreachable"],
  [undefined, "Cannot use a pool after calling end on the pool", "unreachable"],
  // bugs: constraints that should never fail, bad SQL, wrong credentials or database
  ["23505", "duplicate key value violates unique constraint", "defect"],
  ["23503", "insert or update violates foreign key constraint", "defect"],
  ["23502", "null value in column violates not-null constraint", "defect"],
  ["23514", "new row violates check constraint", "defect"],
  ["40002", "integrity constraint violation at commit", "defect"],
  ["42601", "syntax error at or near", "defect"],
  ["42P01", "relation does not exist", "defect"],
  ["42703", "column does not exist", "defect"],
  ["22P02", "invalid input syntax for type uuid", "defect"],
  ["28P01", "password authentication failed", "defect"],
  ["3D000", "database does not exist", "defect"],
  ["57P04", "database dropped", "defect"],
  ["ENOTFOUND", "getaddrinfo ENOTFOUND nowhere", "defect"],
  [undefined, "something else went wrong", "defect"]
]

describe("DatabaseUnavailable.classify", () => {
  it("sorts each failure, in an SqlError or as the driver's error itself", () => {
    for (const [code, message, expected] of TABLE) {
      for (const error of [statementFailure(message, code), driverError(message, code)]) {
        const classified = DatabaseUnavailable.classify(error)
        assert.strictEqual(classified?.reason ?? "defect", expected, `${code ?? "-"} ${message}`)
        if (classified !== undefined) assert.strictEqual(classified.code, code)
      }
    }
  })

  it("takes the pool's refusal to give a connection as passing, unless the server said why", () => {
    const acquire = (cause: Error) => new SqlError({ cause, message: "Failed to acquire connection" })
    assert.strictEqual(DatabaseUnavailable.classify(acquire(new Error("No client returned")))?.reason, "unreachable")
    assert.strictEqual(
      DatabaseUnavailable.classify(new SqlError({ cause: new Error("boom"), message: "Connection error" }))?.reason,
      "unreachable"
    )
    assert.strictEqual(
      DatabaseUnavailable.classify(
        acquire(driverError("database \"x\" is not currently accepting connections", "55000"))
      )
        ?.reason,
      "unreachable"
    )
    assert.isUndefined(DatabaseUnavailable.classify(acquire(driverError("password authentication failed", "28P01"))))
    assert.isUndefined(DatabaseUnavailable.classify(acquire(driverError("database \"x\" does not exist", "3D000"))))
    // the same SQLSTATE on a statement is a bug
    assert.isUndefined(DatabaseUnavailable.classify(statementFailure("object not in prerequisite state", "55000")))
  })

  it("is not fooled by a message on something that is not a database failure", () => {
    assert.isUndefined(DatabaseUnavailable.classify(undefined))
    assert.isUndefined(DatabaseUnavailable.classify("Connection terminated"))
    assert.isUndefined(
      DatabaseUnavailable.classify(new SqlError({ cause: new Error("x"), message: "Failed to execute statement" }))
    )
  })

  it("puts neither the statement nor its values in what it says", () => {
    const unavailable = DatabaseUnavailable.classify(statementFailure("deadlock detected", "40P01"))!
    assert.strictEqual(unavailable.message, "database unavailable (conflict, 40P01)")
  })

  it("classifies the real driver's error when nothing listens", () =>
    Effect.runPromise(Effect.gen(function*() {
      // a port that was free a moment ago: nothing answers there
      const port = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const server = createServer().listen(0, "127.0.0.1", () => {
            const { port } = server.address() as { port: number }
            server.close(() => resolve(port))
          })
        })
      )
      const error = yield* Effect.promise(() =>
        new pg.Client({ host: "127.0.0.1", port, user: "postgres", database: "postgres" }).connect().then(
          () => undefined,
          (e: unknown) => e
        )
      )
      assert.strictEqual(DatabaseUnavailable.classify(error)?.reason, "unreachable")
      assert.strictEqual(
        DatabaseUnavailable.classify(new SqlError({ cause: error, message: "Failed to acquire connection" }))?.code,
        "ECONNREFUSED"
      )
    })))
})

layer(TestDatabase.sqlLayer)("the repo boundary (Rows.dieOnDatabaseError)", (it) => {
  it.effect("dies on bad SQL", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const bad = yield* Effect.exit(Rows.dieOnDatabaseError(sql`SELECT * FROM no_such_table`))
      assert.isTrue(Exit.isFailure(bad) && Option.isSome(Cause.dieOption(bad.cause)), "bad SQL is a defect")
      const division = yield* Effect.exit(Rows.dieOnDatabaseError(sql`SELECT 1/0`))
      assert.isTrue(Exit.isFailure(division) && Cause.isDie(division.cause), "a division by zero is a defect")
    }))

  // the embedded database (PGlite) did not cancel the statement at its timeout: real Postgres only
  it.effect.skipIf(TestDatabase.mode() === "embedded")(
    "fails with DatabaseUnavailable on a statement the database cancelled",
    () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // a statement cancelled by its timeout (57014), as the server reports it
        const cancelled = yield* Effect.exit(
          Rows.dieOnDatabaseError(sql.withTransaction(Effect.zipRight(
            sql`SET LOCAL statement_timeout = 50`,
            sql`SELECT pg_sleep(2)`
          )))
        )
        const failure = Exit.isFailure(cancelled) ? Cause.failureOption(cancelled.cause) : Option.none()
        assert.isTrue(Option.isSome(failure), "a cancelled statement is a typed failure")
        assert.deepInclude(Option.getOrThrow(failure), {
          _tag: "DatabaseUnavailable",
          reason: "cancelled",
          code: "57014"
        })
      })
  )
})
