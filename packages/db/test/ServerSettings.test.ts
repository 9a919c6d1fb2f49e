/**
 * A real Postgres server whose autovacuum is off is named in a warning at start
 * (docs/OPERATING.md "Postgres settings"): the rule as a pure function, and the check against the
 * test run's own server (real mode), which must warn exactly when that server's autovacuum is off.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import * as ServerSettings from "../src/ServerSettings.js"

const url = testDatabaseUrl()

describe("Postgres settings", () => {
  it("autovacuum off is named, with where to read why", () => {
    const lines = ServerSettings.warnings(new Map([["autovacuum", "off"], ["track_counts", "on"]]))
    assert.strictEqual(lines.length, 1)
    assert.match(lines[0]!, /autovacuum off/)
    assert.match(lines[0]!, /docs\/OPERATING\.md "Postgres settings"/)
  })

  it("track_counts off is named too", () => {
    const lines = ServerSettings.warnings(new Map([["autovacuum", "on"], ["track_counts", "off"]]))
    assert.deepStrictEqual(lines.length, 1)
    assert.match(lines[0]!, /track_counts off/)
  })

  it("tables with their own autovacuum off are named, with what an hour without it cost", () => {
    const on = new Map([["autovacuum", "on"], ["track_counts", "on"]])
    const lines = ServerSettings.warnings(on, ["cluster_locks", "idempotency_keys"])
    assert.strictEqual(lines.length, 1)
    assert.match(lines[0]!, /autovacuum is off for 2 of this database's tables \(cluster_locks, idempotency_keys\)/)
    assert.match(lines[0]!, /213,000 dead lease rows/)
    const many = ServerSettings.warnings(on, ["a", "b", "c", "d", "e", "f", "g"])
    assert.match(many[0]!, /\(a, b, c, d, e and 2 more\)/)
    // the server's own setting off already covers every table: one line
    assert.lengthOf(ServerSettings.warnings(new Map([["autovacuum", "off"]]), ["cluster_locks"]), 1)
  })

  it("a server with both on gets no warning", () => {
    assert.deepStrictEqual(ServerSettings.warnings(new Map([["autovacuum", "on"], ["track_counts", "on"]])), [])
  })
})

// real mode only: the embedded database is PGlite, which has no autovacuum to check
describe.runIf(url !== undefined)("Postgres settings, on the test run's server", () => {
  it.scoped(
    "the real server's layer warns exactly when its autovacuum is off",
    () =>
      Effect.gen(function*() {
        const database = yield* Effect.acquireRelease(
          Effect.promise(() => e2eDatabase(url!, "settings")),
          (db) => Effect.promise(() => db.drop())
        )
        const warned: Array<string> = []
        const capture = Logger.make(({ logLevel, message }) => {
          if (logLevel === LogLevel.Warning) {
            warned.push(Array.isArray(message) ? message.join(" ") : String(message))
          }
        })
        const autovacuum = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ autovacuum: string }>`SHOW autovacuum`
          return rows[0]!.autovacuum
        }).pipe(
          Effect.provide(
            Database.layerPostgres(Redacted.make(database.url), 1).pipe(
              Layer.provide(Logger.replace(Logger.defaultLogger, capture))
            )
          )
        )
        const named = warned.filter((line) => line.includes("autovacuum off"))
        assert.strictEqual(named.length, autovacuum === "off" ? 1 : 0, `autovacuum is ${autovacuum}: ${warned}`)
      }),
    60_000
  )

  it.scoped(
    "names a table whose own autovacuum is off (as bench:soak --autovacuum off leaves them)",
    () =>
      Effect.gen(function*() {
        const database = yield* Effect.acquireRelease(
          Effect.promise(() => e2eDatabase(url!, "settings_tables")),
          (db) => Effect.promise(() => db.drop())
        )
        const warned: Array<string> = []
        const capture = Logger.make(({ logLevel, message }) => {
          if (logLevel === LogLevel.Warning) {
            warned.push(Array.isArray(message) ? message.join(" ") : String(message))
          }
        })
        // a process's start (the check runs as its layer is built); the first turns the table's off after
        const start = (thenTurnOff: boolean) =>
          Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            if (thenTurnOff) yield* sql`ALTER TABLE idempotency_keys SET (autovacuum_enabled = off)`
            return (yield* sql<{ autovacuum: string }>`SHOW autovacuum`)[0]!.autovacuum
          }).pipe(
            Effect.provide(
              Database.layerPostgres(Redacted.make(database.url), 1).pipe(
                Layer.provide(Logger.replace(Logger.defaultLogger, capture))
              )
            )
          )
        const before = yield* start(true)
        assert.isFalse(warned.some((line) => line.includes("idempotency_keys")), `${warned}`)
        const autovacuum = yield* start(false)
        assert.strictEqual(autovacuum, before)
        const named = warned.filter((line) => line.includes("idempotency_keys"))
        // on a server with autovacuum off, its own line covers the table
        assert.strictEqual(named.length, autovacuum === "off" ? 0 : 1, `${warned}`)
      }),
    60_000
  )
})
