/**
 * With `TEST_CPU_PROFILE=<folder>`, writes a V8 CPU profile (sampled every millisecond) of each test
 * file's worker while the file runs to `<folder>/<file name>.cpuprofile`, for Chrome's DevTools
 * (docs/TESTING.md "Tests"). Off otherwise.
 */
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { basename, join } from "node:path"
import { afterAll } from "vitest"

const dir = process.env["TEST_CPU_PROFILE"]
if (dir !== undefined && dir !== "") {
  const session = new Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.setSamplingInterval", { interval: 1000 })
  await session.post("Profiler.start")
  afterAll(async (suite) => {
    const { profile } = await session.post("Profiler.stop")
    writeFileSync(join(dir, `${basename(suite.file.filepath)}.cpuprofile`), JSON.stringify(profile))
    session.disconnect()
  })
}
