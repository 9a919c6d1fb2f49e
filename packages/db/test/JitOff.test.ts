/**
 * The service's connections never JIT-compile a statement (docs/OPERATING.md "Postgres
 * settings"): a plan estimated far past `jit_above_cost` runs without LLVM on every connection of
 * the pool. Real mode: the embedded PGlite has no JIT to turn off, so there the answers are the
 * same without the setting.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Effect, Layer, Redacted, Schema } from "effect"

const url = testDatabaseUrl()

const clientLayer = (connections: number) =>
  url === undefined
    ? Database.layerEmbedded(undefined, undefined, 0)
    : Layer.unwrapScoped(
      Effect.acquireRelease(
        Effect.promise(() => e2eDatabase(url, "jit")),
        (database) => Effect.promise(() => database.drop())
      ).pipe(Effect.map((database) => Database.layerPostgres(Redacted.make(database.url), connections, 0)))
    )

const Explained = Schema.Array(
  Schema.Struct({ "QUERY PLAN": Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown })) })
)

describe("JIT on the service's connections", () => {
  it.scoped(
    "a statement planned past jit_above_cost runs without JIT, on each connection of the pool",
    () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // a set-returning function declared to return 100M rows: a plan cost far past the defaults'
        // jit_above_cost (100,000) and jit_optimize_above_cost (500,000), a run of one row
        yield* sql`CREATE FUNCTION jit_probe_rows() RETURNS SETOF int LANGUAGE sql ROWS 100000000 AS 'SELECT 1'`
        const plans = yield* Effect.all(
          Array.from({ length: 3 }, () =>
            sql.withTransaction(
              Effect.gen(function*() {
                const rows = yield* sql.unsafe(
                  "EXPLAIN (ANALYZE, FORMAT JSON) SELECT sum(n) FROM jit_probe_rows() n"
                )
                const setting = yield* sql<{ jit: string }>`SHOW jit`
                return { plan: (yield* Schema.decodeUnknown(Explained)(rows))[0]!["QUERY PLAN"][0]!, setting }
              })
            )),
          // three transactions at once hold three connections (the embedded database has one)
          { concurrency: url === undefined ? 1 : "unbounded" }
        )
        for (const { plan, setting } of plans) {
          assert.isAbove(Number((plan["Plan"] as { "Total Cost": number })["Total Cost"]), 500_000)
          assert.notProperty(plan, "JIT", "the statement was JIT-compiled")
          if (url !== undefined) assert.strictEqual(setting[0]!.jit, "off")
        }
      }).pipe(Effect.provide(clientLayer(3))),
    60_000
  )
})
