/**
 * What spans cost the api node's code, in one process, with the tracer as a deployment has it:
 *
 *   native     Effect's default tracer (what every process ran before tracing was configurable:
 *              it records spans nobody exports)
 *   off        no `OTEL_EXPORTER_OTLP_ENDPOINT`: the tracer switched off (infra `Tracing`)
 *   exporting  an endpoint set: the OTLP exporter (JSON, the default) to a local sink that discards
 *   protobuf   the same with `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`
 *
 * The unit of work is shaped like a send's service layer: one `Effect.fn` calling five others in
 * one transaction, eleven statements in all (`SELECT $1` through `@effect/sql-pg` on real
 * Postgres), and a log line. The modes alternate in rounds so a change of machine load hits all
 * of them alike; CPU time of this process per unit, medians over the rounds.
 *
 * `--pure` replaces each statement by the SQL client's own span code (a client span with its six
 * attributes, no I/O), to price the spans alone, without Postgres' noise.
 *
 *   DATABASE_URL=postgres://... npm run bench:spans -- [--rounds 5] [--units 1000] [--pure]
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Tracing } from "@switchboard/infra"
import { ConfigProvider, Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { flag, formatSummary, machine, numberFlag, record, summarize } from "./lib/Measure.js"

const pure = flag("pure") === true
const rounds = numberFlag("rounds", 5)
const units = numberFlag("units", 1000)
const databaseUrl = process.env["DATABASE_URL"]
if (!databaseUrl) {
  console.error("needs DATABASE_URL (real Postgres)")
  process.exit(2)
}

const sink = createServer((req, res) => {
  req.resume()
  req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"))
})
await new Promise<void>((r) => sink.listen(0, "127.0.0.1", () => r()))
const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`

/** What `@effect/sql` does around a statement, without the statement (`--pure`). */
const fakeStatement = (text: string) =>
  Effect.useSpan("sql.execute", { kind: "client", captureStackTrace: false }, (span) => {
    span.attribute("db.system.name", "postgresql")
    span.attribute("db.namespace", "postgres")
    span.attribute("server.address", "127.0.0.1")
    span.attribute("server.port", 5432)
    span.attribute("db.operation.name", "execute")
    span.attribute("db.query.text", text)
    return Effect.void
  })
const statement = (n: number) =>
  pure ? fakeStatement("SELECT $1::int AS a") : Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT ${n}::int AS a`)
const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  pure
    ? Effect.useSpan("sql.transaction", { kind: "client", captureStackTrace: false }, () => effect)
    : Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(effect))

const repo = Effect.fn("BenchRepo.read")(function*(n: number) {
  yield* statement(n)
  yield* statement(n + 1)
})
const unit = Effect.fn("BenchService.send")(function*(n: number) {
  yield* transaction(Effect.gen(function*() {
    for (let i = 0; i < 5; i++) yield* repo(n + i)
  }))
  yield* statement(n)
  yield* Effect.logDebug("unit done")
})

const MODES = {
  native: {},
  off: {},
  exporting: { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_BSP_SCHEDULE_DELAY: "1000" },
  protobuf: {
    OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
    OTEL_BSP_SCHEDULE_DELAY: "1000",
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf"
  }
} as const
type Mode = keyof typeof MODES

const measure = (mode: Mode) => {
  const work = Effect.gen(function*() {
    for (let i = 0; i < 50; i++) yield* unit(i) // warm-up
    const cpu0 = process.cpuUsage()
    for (let i = 0; i < units; i++) yield* unit(i)
    const cpu = process.cpuUsage(cpu0)
    return (cpu.user + cpu.system) / 1000 / units
  })
  const tracing = mode === "native" ? Layer.empty : Tracing.layerFromEnv("bench-spans")
  return work.pipe(
    // the root of each unit: a traced request's span when exporting
    Effect.withSpan("bench.request"),
    Effect.provide(tracing),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(MODES[mode])))),
    Logger.withMinimumLogLevel(LogLevel.Info)
  )
}

const main = Effect.gen(function*() {
  console.log(`machine: ${JSON.stringify(machine())}`)
  const samples: Record<Mode, Array<number>> = { native: [], off: [], exporting: [], protobuf: [] }
  for (let round = 1; round <= rounds; round++) {
    for (const mode of Object.keys(MODES) as Array<Mode>) {
      const ms = yield* measure(mode)
      samples[mode].push(ms)
      console.log(`round ${round} ${mode.padEnd(9)}: ${ms.toFixed(3)} ms CPU per unit`)
    }
  }
  const summary = Object.fromEntries(
    (Object.keys(MODES) as Array<Mode>).map((mode) => [mode, summarize(samples[mode])])
  )
  console.log(
    `\nmedian [min–max] over ${rounds} rounds of ${units} units (11 statements, 6 fn spans, 1 transaction${
      pure ? ", statements without I/O" : ""
    }):`
  )
  for (const [mode, s] of Object.entries(summary)) console.log(`  ${mode.padEnd(9)} ${formatSummary(s, 3)} ms`)
  console.log(record("spans", { pure, rounds, units, summary }))
}).pipe(
  Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 })),
  Effect.ensuring(Effect.sync(() => sink.close()))
)

Effect.runPromise(main).catch((error) => {
  console.error(error)
  process.exit(1)
})
