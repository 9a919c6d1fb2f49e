import { Database, DatabaseConfig } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import pg from "pg"

/**
 * A database no migration ran on: real mode, a new empty database (dropped at the end);
 * embedded mode, a new in-memory PGlite made by initdb.
 */
export function UnmigratedLayer() {
  return Layer.unwrapScoped(Effect.gen(function*() {
    const url = TestDatabase.testDatabaseUrl()
    if (url === undefined) {
      return Database.layer.pipe(Layer.provide(DatabaseConfig.layer({ url: Option.none(), dataDir: Database.MEMORY })))
    }
    const name = `sbt_${process.pid}_unmigrated_${randomBytes(4).toString("hex")}`
    const admin = (statement: string) =>
      Effect.promise(async () => {
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        try {
          await client.query(statement)
        } finally {
          await client.end()
        }
      })
    yield* Effect.acquireRelease(
      admin(`CREATE DATABASE "${name}"`),
      () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).pipe(Effect.ignore)
    )
    return Database.layer.pipe(
      Layer.provide(
        DatabaseConfig.layer({
          url: Option.some(Redacted.make(TestDatabase.withDatabase(url, name))),
          maxConnections: 2
        })
      )
    )
  })).pipe(Layer.orDie)
}
