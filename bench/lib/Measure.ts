/**
 * What every benchmark reports: percentiles, the median/min/max of repeated runs, CPU time and
 * memory of a process (from /proc), the machine, and one JSON line per run in bench/results/.
 */
import { appendFileSync, mkdirSync, readFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { resolve } from "node:path"

/** The p-th percentile (0..100) of `values`, nearest rank; NaN when empty. */
export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

export interface Summary {
  readonly median: number
  readonly min: number
  readonly max: number
  readonly runs: number
}

export const summarize = (values: ReadonlyArray<number>): Summary => ({
  median: percentile(values, 50),
  min: Math.min(...values),
  max: Math.max(...values),
  runs: values.length
})

/** "median [min–max]" with `digits` decimals. */
export const formatSummary = (s: Summary, digits = 1) =>
  `${s.median.toFixed(digits)} [${s.min.toFixed(digits)}–${s.max.toFixed(digits)}]`

const TICKS_PER_SECOND = 100

/** User + system CPU seconds a process (and its waited-for children) has used so far. */
export const cpuSeconds = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  // fields after the command name (which may contain spaces) start at ") "
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]))
  return (utime! + stime! + cutime! + cstime!) / TICKS_PER_SECOND
}

/** Resident set size of a process in MiB. */
export const rssMiB = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const match = /VmRSS:\s+(\d+) kB/.exec(status)
  return match ? Number(match[1]) / 1024 : Number.NaN
}

/** Settings of the Postgres server the run measures (`noteServerSettings`), recorded with every line. */
let serverSettings: Record<string, string> | undefined

/**
 * Notes the server's settings that change what a run measures: with `autovacuum` off (some CI
 * images) dead rows and stale planner statistics make costs grow over a run, which a production
 * server does not do (docs/OPERATING.md "Postgres settings"); says so on stderr.
 */
export const noteServerSettings = (settings: Record<string, string>) => {
  serverSettings = settings
  if (settings["autovacuum"] === "off") {
    console.error(
      "WARNING: this Postgres has autovacuum off: costs grow over the run as dead rows pile up and the " +
        "planner's statistics go stale; a production server keeps it on (docs/OPERATING.md \"Postgres settings\")"
    )
  }
}

export const machine = () => ({
  cpu: cpus()[0]?.model ?? "unknown",
  cores: cpus().length,
  memory_gib: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  load_1m: Number(loadavg()[0]!.toFixed(2)),
  ...(serverSettings === undefined ? {} : { postgres: serverSettings })
})

/** bench/results, or BENCH_RESULTS_DIR (the CI smoke run keeps its numbers out of the record). */
const resultsDir = process.env["BENCH_RESULTS_DIR"] ?? resolve(import.meta.dirname, "..", "results")

/** Appends one run's numbers to <results>/<benchmark>.jsonl (with the time and machine). */
export const record = (benchmark: string, result: Record<string, unknown>) => {
  mkdirSync(resultsDir, { recursive: true })
  const line = JSON.stringify({ at: new Date().toISOString(), benchmark, machine: machine(), ...result })
  appendFileSync(resolve(resultsDir, `${benchmark}.jsonl`), line + "\n")
  return line
}

/** `--name value` / `--flag` from process.argv. */
export const flag = (name: string): string | boolean | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  if (i === -1) return undefined
  const next = process.argv[i + 1]
  return next === undefined || next.startsWith("--") ? true : next
}

export const numberFlag = (name: string, fallback: number): number => {
  const value = flag(name)
  return typeof value === "string" ? Number(value) : fallback
}
