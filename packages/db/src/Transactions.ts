/**
 * Transactions a use-case opens around several repository calls (a service or an entity: "a
 * use-case that writes several rows runs in one transaction, its event row included"). Its own
 * statements (BEGIN, COMMIT) follow the repos' policy for database failures (`Rows.ts`), so a
 * database that goes away mid-request still ends as a 503 at the HTTP edge.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { dieOnDatabaseError } from "./Rows.js"

export class Transactions extends Effect.Service<Transactions>()("@switchboard/db/Transactions", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Runs `self` in one transaction (a savepoint inside another). */
    const run = <A, E, R>(self: Effect.Effect<A, E, R>) => dieOnDatabaseError(sql.withTransaction(self))

    return { run } as const
  })
}) {}
