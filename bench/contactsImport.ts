/**
 * Contact import throughput (docs/API.md "Contact imports"): a 50 000-row file with national numbers,
 * a BOM, quoted multi-line fields, 37 bad rows and 500 repeats, stored as the API stores it and
 * run by the import worker in this process (parse + batches of 1000) on a fresh database. Reports
 * wall time, rows/s, this process's CPU per row, how often progress was seen moving, and checks
 * the counts.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres flock /tmp/sb-bench.lock \
 *     node --import tsx bench/contactsImport.ts --runs 3
 */
import { SqlClient } from "@effect/sql"
import { ContactImportsRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { ContactCsv, Ids } from "@switchboard/domain"
import { ContactImportWorker } from "@switchboard/entities"
import { Effect, Fiber, Layer, Schedule } from "effect"
import { BAD, makeFile, REPEATS, ROWS } from "./lib/ContactsFile.js"
import { formatSummary, numberFlag, record, summarize } from "./lib/Measure.js"

const oneRun = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const imports = yield* ContactImportsRepo.ContactImportsRepo
  const worker = yield* ContactImportWorker.make
  const workspaceId = yield* Ids.newId("ws")
  const now = new Date().toISOString()
  yield* sql`INSERT INTO workspaces (id, name, plan, created_at, updated_at)
    VALUES (${workspaceId}, 'bench', 'enterprise', ${now}, ${now})`
  const { text, unique } = makeFile()
  const parsed = ContactCsv.parseContactCsv(text, "DE")
  const total = parsed._tag === "Parsed" ? parsed.rows.length : 0
  const id = yield* Ids.newId("imp")
  yield* imports.insert({
    id,
    workspaceId,
    onConflict: "skip",
    defaultCountry: "DE",
    tags: [],
    groupId: null,
    file: text,
    totalRows: total,
    now
  })
  const seen = new Set<number>()
  const poller = yield* imports.find(workspaceId, id).pipe(
    Effect.tap((i) => Effect.sync(() => i._tag === "Some" && seen.add(i.value.processed_rows))),
    Effect.repeat(Schedule.spaced("50 millis")),
    Effect.fork
  )
  const cpu = process.cpuUsage()
  const start = performance.now()
  yield* worker.drain
  const wallMs = performance.now() - start
  const used = process.cpuUsage(cpu)
  yield* Fiber.interrupt(poller)
  const done = (yield* imports.find(workspaceId, id)).pipe((o) => o._tag === "Some" ? o.value : undefined)!
  const counts = { created: done.created, skipped: done.skipped, failed: done.failed, total: done.total_rows }
  const expected = { created: unique, skipped: REPEATS, failed: BAD, total: ROWS }
  if (JSON.stringify(counts) !== JSON.stringify(expected)) {
    throw new Error(`counts ${JSON.stringify(counts)} != ${JSON.stringify(expected)}`)
  }
  return {
    wall_ms: Math.round(wallMs),
    rows_per_s: Math.round(ROWS / (wallMs / 1000)),
    cpu_us_per_row: Math.round((used.user + used.system) / ROWS),
    progress_values_seen: seen.size,
    counts
  }
})

const runs = numberFlag("runs", 3)
const url = TestDatabase.testDatabaseUrl()
if (!url) throw new Error("set DATABASE_URL (real Postgres)")
await TestDatabase.prepareTemplate(url)
const results: Array<Effect.Effect.Success<typeof oneRun>> = []
for (let i = 0; i < runs; i++) {
  const result = await Effect.runPromise(
    oneRun.pipe(
      Effect.provide(ContactImportWorker.dependencies.pipe(Layer.provideMerge(TestDatabase.sqlLayer))),
      Effect.scoped
    )
  )
  console.log(record("contactsImport", result))
  results.push(result)
}
console.log("wall ms", formatSummary(summarize(results.map((r) => r.wall_ms)), 0))
console.log("rows/s", formatSummary(summarize(results.map((r) => r.rows_per_s)), 0))
console.log("cpu us/row", formatSummary(summarize(results.map((r) => r.cpu_us_per_row)), 0))
