/**
 * Statements run again and again become named, server-side prepared statements on their
 * connection (docs/ARCHITECTURE.md "Prepared statements"): from the threshold-th run on, once each, with the
 * same answers; never with the threshold at 0; and a statement whose result type a migration
 * changed under a live pool keeps answering. Through the real SqlClient layer, in both modes.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Effect, Layer, Redacted } from "effect"

const url = testDatabaseUrl()

/** A client on ONE connection (so every statement shares its prepared statements) */
const clientLayer = (threshold: number) =>
  url === undefined
    ? Database.layerEmbedded(undefined, undefined, threshold)
    : Layer.unwrapScoped(
      Effect.acquireRelease(
        Effect.promise(() => e2eDatabase(url, "prepared")),
        (database) => Effect.promise(() => database.drop())
      ).pipe(Effect.map((database) => Database.layerPostgres(Redacted.make(database.url), 1, threshold)))
    )

const STATEMENT = "SELECT $1::int + 1 AS next"

/** The connection's own named statements with this text */
const preparedCount = (sql: SqlClient.SqlClient, text: string) =>
  sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = ${text}`.pipe(
    Effect.map((rows) => rows[0]!.n)
  )

describe("prepared statements", () => {
  it.scoped("a statement becomes named at its third run, once, and answers the same", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const answers: Array<number> = []
      const named: Array<number> = []
      for (let i = 1; i <= 6; i++) {
        const rows = yield* sql.unsafe<{ next: number }>(STATEMENT, [i])
        answers.push(rows[0]!.next)
        named.push(yield* preparedCount(sql, STATEMENT))
      }
      assert.deepStrictEqual(answers, [2, 3, 4, 5, 6, 7])
      assert.deepStrictEqual(named, [0, 0, 1, 1, 1, 1])
    }).pipe(Effect.provide(clientLayer(3))), 60_000)

  it.scoped("threshold 0: every statement is sent unnamed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (let i = 1; i <= 6; i++) yield* sql.unsafe(STATEMENT, [i])
      const all = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_prepared_statements`
      assert.strictEqual(all[0]!.n, 0)
    }).pipe(Effect.provide(clientLayer(0))), 60_000)

  it.scoped("a statement whose result type a migration changed keeps answering", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE prepared_probe (a int)`
      yield* sql`INSERT INTO prepared_probe VALUES (1)`
      const select = "SELECT * FROM prepared_probe WHERE a = $1"
      for (let i = 0; i < 3; i++) yield* sql.unsafe(select, [1])
      assert.strictEqual(yield* preparedCount(sql, select), 1)

      // `*` now means two columns: Postgres refuses to run the cached statement (SQLSTATE 0A000)
      yield* sql`ALTER TABLE prepared_probe ADD COLUMN b int DEFAULT 7`
      const after = yield* sql.unsafe<{ a: number; b: number }>(select, [1])
      assert.deepStrictEqual(after.map((r) => ({ ...r })), [{ a: 1, b: 7 }])

      // inside a transaction the refusal is that transaction's error; the statement is unnamed after
      const inTransaction = "SELECT * FROM prepared_probe WHERE a = $1 AND $1 > 0"
      for (let i = 0; i < 3; i++) yield* sql.unsafe(inTransaction, [1])
      yield* sql`ALTER TABLE prepared_probe ADD COLUMN c int DEFAULT 8`
      const refused = yield* sql.withTransaction(sql.unsafe(inTransaction, [1])).pipe(Effect.flip)
      assert.strictEqual((refused.cause as { code?: string }).code, "0A000")
      const rows = yield* sql.withTransaction(sql.unsafe(inTransaction, [1]))
      assert.deepStrictEqual(rows.map((r) => ({ ...r })), [{ a: 1, b: 7, c: 8 }])
    }).pipe(Effect.provide(clientLayer(3))), 60_000)
})
