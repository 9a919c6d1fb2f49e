/**
 * A green run reads clean (docs/TESTING.md "Tests"): what the code under test prints while a test file
 * runs (app log lines, a library's warning, the stack of an error a library handles and reports
 * with `console.error`, such as ioredis' "Unhandled error event") goes to that file's own log,
 * `.tmp/test-logs/<test file>.log`, instead of the terminal. `TEST_LOGS=1` prints it as before.
 * Vitest's own report (failures, diffs, stacks of failed tests) is untouched.
 */
import { appendFileSync, mkdirSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { format } from "node:util"
import { expect } from "vitest"

const root = resolve(import.meta.dirname, "..", "..")
export const TEST_LOG_DIR = join(root, ".tmp", "test-logs")

/** The log of the test file running in this worker (vitest sets its path before importing it). */
const logFile = () => {
  const testPath = expect.getState().testPath
  const name = testPath ? relative(root, testPath).replace(/[\\/]/g, "__") : "unknown-file"
  return join(TEST_LOG_DIR, `${name}.log`)
}

if (!process.env["TEST_LOGS"]) {
  mkdirSync(TEST_LOG_DIR, { recursive: true })
  const write = (level: string) => (...args: ReadonlyArray<unknown>) => {
    try {
      appendFileSync(logFile(), `${new Date().toISOString()} ${level} ${format(...args)}\n`)
    } catch {
      // a log that cannot be written must not fail the test
    }
  }
  for (const level of ["log", "info", "warn", "error", "debug", "trace"] as const) {
    console[level] = write(level)
  }
}
