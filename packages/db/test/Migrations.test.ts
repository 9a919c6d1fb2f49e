import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { Migrations } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Effect } from "effect"

describe("Migrations", () => {
  layer(TestDatabase.sqlLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("applies a migration whose id is below one already applied (branches merge in any order)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const ids = Object.keys(Migrations.migrations).map((k) => Number(k.split("_")[0]))
        const highest = Math.max(...ids)
        // this database as it was before 0021 arrived, with a higher block (0030) already applied
        // (webhook_deliveries_created went in 0152; 0021 makes it again when run alone)
        yield* sql`DROP INDEX IF EXISTS webhook_deliveries_pending_due, webhook_deliveries_delivering,
          webhook_deliveries_created`
        yield* sql`DELETE FROM ${sql(Migrations.TABLE)} WHERE migration_id = 21`
        assert.isAbove(highest, 21)

        const applied = yield* Migrations.run
        assert.deepStrictEqual(applied, [[21, "index_webhook_sweeps"]])
        const indexes = yield* sql<{ indexname: string }>`SELECT indexname FROM pg_indexes
          WHERE indexname IN ('webhook_deliveries_pending_due', 'webhook_deliveries_delivering', 'webhook_deliveries_created')`
        assert.strictEqual(indexes.length, 3)
        assert.deepStrictEqual(yield* Migrations.run, [])
        const recorded = yield* sql<{ migration_id: number }>`SELECT migration_id FROM ${
          sql(Migrations.TABLE)
        } ORDER BY 1`
        assert.deepStrictEqual(recorded.map((r) => Number(r.migration_id)), [...ids].sort((a, b) => a - b))
      }))
  })
})
