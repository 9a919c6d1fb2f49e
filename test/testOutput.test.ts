/**
 * A green run reads clean (docs/TESTING.md "Tests"): app log lines and library stacks printed while a test
 * file runs go to `.tmp/test-logs/<file>.log`, not the terminal; `TEST_LOGS=1` shows them.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { TEST_LOG_DIR } from "./support/testLogs.js"

const run = promisify(execFile)
const root = resolve(import.meta.dirname, "..")
const NOISE = /NOISY-APP-LINE|NOISY-LIBRARY-STACK|NOISY-CONSOLE-LOG|ECONNREFUSED/

const vitest = (env: Record<string, string>) =>
  run(process.execPath, [
    join(root, "node_modules/vitest/vitest.mjs"),
    "run",
    "--config",
    "test/fixtures/vitest.fixtures.config.ts",
    "test/fixtures/noisyOutput.fixture.ts"
  ], { cwd: root, env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", ...env } })

describe("test output", () => {
  it("keeps a passing file's app logs and library stacks out of the terminal, in the file's log", async () => {
    const log = join(TEST_LOG_DIR, "test__fixtures__noisyOutput.fixture.ts.log")
    rmSync(log, { force: true })
    const { stderr, stdout } = await vitest({})
    assert.match(stdout, /1 passed/)
    assert.notMatch(stdout + stderr, NOISE)
    const kept = readFileSync(log, "utf8")
    assert.include(kept, "NOISY-APP-LINE")
    assert.include(kept, "NOISY-LIBRARY-STACK")
  }, 120_000)

  it("shows them with TEST_LOGS=1", async () => {
    const { stderr, stdout } = await vitest({ TEST_LOGS: "1" })
    assert.match(stdout + stderr, /NOISY-APP-LINE/)
    assert.match(stdout + stderr, /NOISY-LIBRARY-STACK/)
  }, 120_000)
})
