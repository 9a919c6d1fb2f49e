/**
 * With `TEST_CPU_LOG=<file>`, appends a JSON line per test file: `cpuMs`, the CPU (user + system)
 * its worker spent from the file's start (its imports included) to its end; `wallMs`; `heapMb`, the
 * worker's heap in use after it (MiB); `pid`, the worker; `maxStallMs`, the longest its event loop
 * was held by one task from the file's first hook on (the in-process app's timers, the cluster's shard lock refresh among them,
 * wait that long; docs/TESTING.md "Tests"). It counts the worker only: not the processes a file
 * starts, nor Postgres. Off otherwise.
 */
import { appendFileSync } from "node:fs"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { afterAll, beforeAll } from "vitest"

const log = process.env["TEST_CPU_LOG"]
if (log !== undefined && log !== "") {
  // from this setup file's evaluation, which comes before the file's own imports
  const cpu = process.cpuUsage()
  const started = Date.now()
  const delay = monitorEventLoopDelay({ resolution: 20 })
  // from the file's first hook: its imports, which hold the loop before anything runs, do not count
  beforeAll(() => delay.enable())
  afterAll((suite) => {
    const used = process.cpuUsage(cpu)
    appendFileSync(
      log,
      JSON.stringify({
        file: suite.file.filepath,
        cpuMs: Math.round((used.user + used.system) / 1000),
        wallMs: Date.now() - started,
        heapMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
        pid: process.pid,
        maxStallMs: Math.round(delay.max / 1e6)
      }) + "\n"
    )
    delay.disable()
  })
}
