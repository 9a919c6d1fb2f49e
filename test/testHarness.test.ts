/**
 * How the suite runs (docs/TESTING.md "Tests"): the two pools of `vitest.config.ts` (the end-to-end
 * files in one of their own, so that one waiting for its turn never holds up a worker of the
 * others), and the service processes started from the bundles this run built
 * (test/support/ServiceBundles.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { dirname, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { createVitest } from "vitest/node"
import { isEndToEnd } from "./support/EndToEnd.js"
import { serviceEntry } from "./support/ServiceBundles.js"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")

describe("the test files' pools", () => {
  it("runs every file once: the end-to-end ones in worker threads of their own, the others in forks", async () => {
    const vitest = await createVitest("test", { root, config: resolve(root, "vitest.config.ts"), watch: false })
    try {
      const specifications = await vitest.globTestSpecifications()
      const files = specifications.map((s) => relative(root, s.moduleId))
      assert.strictEqual(new Set(files).size, files.length, "a file in two projects would run twice")
      const endToEnd = specifications.filter((s) => isEndToEnd(s.moduleId))
      assert.isAbove(endToEnd.length, 10)
      for (const s of specifications) {
        const expected = isEndToEnd(s.moduleId) ? ["end-to-end", "threads"] : ["in-process", "forks"]
        assert.deepStrictEqual([s.project.name, s.pool], expected, relative(root, s.moduleId))
      }
      assert.include(files, "test/testHarness.test.ts")
      assert.include(files, "packages/db/test/DispatchQueueRepo.test.ts")
    } finally {
      await vitest.close()
    }
  })

  it("knows an end-to-end file by its name", () => {
    assert.isTrue(isEndToEnd("/repo/test/chaosApiKill.e2e.test.ts"))
    assert.isFalse(isEndToEnd("/repo/test/messages.test.ts"))
    assert.isFalse(isEndToEnd("/repo/test/e2e.test.ts.orig"))
  })
})

describe("the service processes", () => {
  it("start from the bundle this run built of each service, not through tsx", () => {
    for (const name of ["api", "runner", "standalone", "admin"] as const) {
      const entry = serviceEntry(name)
      assert.lengthOf(entry, 1, `${name}: ${entry.join(" ")}`)
      assert.match(entry[0]!, new RegExp(`/\\.tmp/services-[^/]+/${name}\\.mjs$`))
      assert.isTrue(existsSync(entry[0]!))
    }
  })
})
