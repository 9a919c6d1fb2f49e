/**
 * Nodes starting at the same instant on a fresh database all come up: the cluster's storage
 * tables are created once, under a lock, instead of racing in the catalog. Real Postgres only
 * (the embedded database has one process).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Database } from "@switchboard/db"
import { e2eDatabase, testDatabaseUrl } from "@switchboard/db/testing"
import { Cluster } from "@switchboard/entities"
import { Effect, Layer, Redacted } from "effect"
import pg from "pg"

const url = testDatabaseUrl()

describe.skipIf(url === undefined)("cluster storage tables", () => {
  let database: Awaited<ReturnType<typeof e2eDatabase>> | undefined

  beforeAll(async () => {
    database = await e2eDatabase(url!, "cluster_tables")
  }, 60_000)

  afterAll(async () => {
    await database?.drop()
  }, 60_000)

  it("six nodes starting together on a fresh database all create or find them", async () => {
    // each start has its own connection pool, like a separate process, as small as a client's
    const start = () =>
      Effect.runPromiseExit(
        Layer.build(Cluster.storageTables).pipe(
          Effect.provide(Database.layerPostgres(Redacted.make(database!.url), 2)),
          Effect.scoped
        )
      )
    const exits = await Promise.all(Array.from({ length: 6 }, start))
    assert.deepStrictEqual(exits.map((exit) => exit._tag), Array(6).fill("Success"))

    const client = new pg.Client({ connectionString: database!.url })
    await client.connect()
    const tables = await client.query<{ tablename: string }>(
      "SELECT tablename FROM pg_tables WHERE tablename LIKE 'cluster\\_%' ORDER BY tablename"
    )
    await client.end()
    assert.includeMembers(tables.rows.map((r) => r.tablename), [
      "cluster_messages",
      "cluster_replies",
      "cluster_runners"
    ])
  }, 60_000)
})
