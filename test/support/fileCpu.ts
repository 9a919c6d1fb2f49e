/**
 * With `TEST_CPU_LOG=<file>`, appends a JSON line per test file: `cpuMs`, the CPU (user + system)
 * its worker spent from the file's start (its imports included) to its end; `wallMs`; `heapMb`, the
 * worker's heap in use after it (MiB); `pid`, the worker (docs/TESTING.md "Tests"). It counts the
 * worker only: not the processes a file starts, nor Postgres. Off otherwise.
 */
import { appendFileSync } from "node:fs"
import { afterAll } from "vitest"

const log = process.env["TEST_CPU_LOG"]
if (log !== undefined && log !== "") {
  // from this setup file's evaluation, which comes before the file's own imports
  const cpu = process.cpuUsage()
  const started = Date.now()
  afterAll((suite) => {
    const used = process.cpuUsage(cpu)
    appendFileSync(
      log,
      JSON.stringify({
        file: suite.file.filepath,
        cpuMs: Math.round((used.user + used.system) / 1000),
        wallMs: Date.now() - started,
        heapMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
        pid: process.pid
      }) + "\n"
    )
  })
}
