/**
 * Which partitions the statements of an effect read: each statement the effect sends is also run
 * under EXPLAIN ANALYZE (rolled back), as sent and on its generic plan (packages/db/test
 * Partitions.test.ts, MessagePartitions.test.ts).
 */
import { SqlClient, Statement } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Data, Effect } from "effect"

export interface Read {
  readonly statement: string
  readonly partitions: Array<string>
}

class Rollback extends Data.TaggedError("Rollback")<{ readonly plan: unknown }> {}

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Actual Loops"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** The relations a plan read: scan nodes that ran at least once. */
const scanned = (node: PlanNode): Array<string> => [
  ...(node["Relation Name"] !== undefined && / Scan$/.test(node["Node Type"]) && (node["Actual Loops"] ?? 0) > 0
    ? [node["Relation Name"]]
    : []),
  ...(node.Plans ?? []).flatMap(scanned)
]

/** A statement's parameter as an SQL literal of unknown type (Postgres reads it as the type it needs). */
const literalOf = (value: unknown): string => {
  if (value === null || value === undefined) return "NULL"
  const quote = (text: string) => `'${text.replace(/'/g, "''")}'`
  if (Array.isArray(value)) {
    const element = (v: unknown) => (v === null ? "NULL" : `"${String(v).replace(/["\\]/g, (c) => `\\${c}`)}"`)
    return quote(`{${value.map(element).join(",")}}`)
  }
  return quote(value instanceof Date ? value.toISOString() : String(value))
}

/**
 * Runs `effect`; before each statement it sends, runs that statement under EXPLAIN ANALYZE in a
 * transaction rolled back, twice: as sent (planned for its values) and as a prepared statement on
 * its generic plan (what the pool's named statements run after `DATABASE_PREPARE_THRESHOLD` runs,
 * pruned when the executor starts); returns the partitions matching `history` each read, in
 * statement order.
 */
export const partitionsRead = <A, E, R>(effect: Effect.Effect<A, E, R>, history: RegExp) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const reads: Array<Read> = []
    const explained = (run: Effect.Effect<ReadonlyArray<{ "QUERY PLAN": unknown }>, SqlError>) =>
      sql.withTransaction(Effect.flatMap(run, (rows) => Effect.fail(new Rollback({ plan: rows[0]!["QUERY PLAN"] }))))
        .pipe(
          Effect.catchTag("Rollback", (r) => Effect.succeed(r.plan)),
          Effect.map((plan) => {
            const json = (typeof plan === "string" ? JSON.parse(plan) : plan) as ReadonlyArray<{ Plan: PlanNode }>
            return [...new Set(scanned(json[0]!.Plan).filter((r) => history.test(r)))].sort()
          })
        )
    const result = yield* effect.pipe(
      Statement.withTransformer((statement) =>
        Effect.gen(function*() {
          const [text, params] = statement.compile()
          const name = text.replace(/\s+/g, " ").slice(0, 80)
          const custom = yield* explained(sql.unsafe(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params))
          reads.push({ statement: `${name} (custom plan)`, partitions: custom })
          if (params.length > 0) {
            // EXECUTE takes no bound parameters: its arguments as literals of unknown type
            const values = params.map(literalOf).join(", ")
            const generic = yield* explained(Effect.gen(function*() {
              yield* sql`SET LOCAL plan_cache_mode = force_generic_plan`
              yield* sql.unsafe(`PREPARE partitions_explain AS ${text}`)
              return yield* sql.unsafe<{ "QUERY PLAN": unknown }>(
                `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE partitions_explain(${values})`
              ).pipe(Effect.ensuring(Effect.ignore(sql.unsafe("DEALLOCATE partitions_explain"))))
            }))
            reads.push({ statement: `${name} (generic plan)`, partitions: generic })
          }
          return statement
        }).pipe(Statement.withTransformerDisabled, Effect.orDie)
      )
    )
    return { result, reads }
  })
