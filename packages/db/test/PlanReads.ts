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
  /** how each partition was read: `relation index` or `relation Seq Scan` (a plan's shape) */
  readonly scans: Array<string>
}

class Rollback extends Data.TaggedError("Rollback")<{ readonly plan: unknown }> {}

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Actual Loops"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** The scan nodes of a plan that ran at least once. */
const scanNodes = (node: PlanNode): Array<PlanNode> => [
  ...(node["Relation Name"] !== undefined && / Scan$/.test(node["Node Type"]) && (node["Actual Loops"] ?? 0) > 0
    ? [node]
    : []),
  ...(node.Plans ?? []).flatMap(scanNodes)
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
 * The statements of `reads` whose generic plan reads the partitions differently from the plan made
 * for their values (another index, or a scan of the whole partition): a flip of the plan by the
 * generic plan's row estimates. Each as `statement: custom scans | generic scans`.
 */
export const flipped = (reads: ReadonlyArray<Read>): Array<string> =>
  reads.flatMap((read, i) => {
    const generic = reads[i + 1]
    if (!read.statement.endsWith("(custom plan)") || generic === undefined) return []
    if (!generic.statement.endsWith("(generic plan)")) return []
    return read.scans.join() === generic.scans.join()
      ? []
      : [`${read.statement}: ${read.scans.join(", ")} | ${generic.scans.join(", ")}`]
  })

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
            const nodes = scanNodes(json[0]!.Plan).filter((n) => history.test(n["Relation Name"]!))
            return {
              partitions: [...new Set(nodes.map((n) => n["Relation Name"]!))].sort(),
              scans: [...new Set(nodes.map((n) => `${n["Relation Name"]} ${n["Index Name"] ?? n["Node Type"]}`))].sort()
            }
          })
        )
    const result = yield* effect.pipe(
      Statement.withTransformer((statement) =>
        Effect.gen(function*() {
          const [text, params] = statement.compile()
          const name = text.replace(/\s+/g, " ").slice(0, 80)
          const custom = yield* explained(sql.unsafe(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params))
          reads.push({ statement: `${name} (custom plan)`, ...custom })
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
            reads.push({ statement: `${name} (generic plan)`, ...generic })
          }
          return statement
        }).pipe(Statement.withTransformerDisabled, Effect.orDie)
      )
    )
    return { result, reads }
  })
