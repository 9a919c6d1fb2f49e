/**
 * What a test file sets in `process.env` (e.g. `RATE_LIMITS=on` and a tight login limit) must not
 * reach the files that run after it in the same worker (with shared workers, vitest `isolate: false`,
 * docs/TESTING.md "How long it takes"; harmless with the default fresh worker per file): each file
 * starts from the environment the worker had before it, and it is put back when the file ends.
 */
import { afterAll } from "vitest"

const before = { ...process.env }

afterAll(() => {
  for (const key of Object.keys(process.env)) {
    if (!(key in before)) delete process.env[key]
  }
  Object.assign(process.env, before)
})
