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
})
