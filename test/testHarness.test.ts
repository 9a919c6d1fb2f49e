/**
 * How the suite runs (docs/TESTING.md "Tests"): the two pools of `vitest.config.ts` (the end-to-end
 * files in one of their own, so that one waiting for its turn never holds up a worker of the
 * others), and the service processes started from the production build (scripts/build.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { createVitest } from "vitest/node"
import { isFresh } from "../scripts/build.js"
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
  it("start from the production build (npm run build's dist/), as npm start and the image do, not through tsx", () => {
    const scripts = (JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>
    }).scripts
    for (const name of ["api", "runner", "standalone", "admin"] as const) {
      const entry = serviceEntry(name)
      assert.deepStrictEqual(entry, ["--enable-source-maps", resolve(root, "dist", `${name}.mjs`)])
      assert.isTrue(existsSync(entry[1]!))
      assert.isTrue(existsSync(`${entry[1]!}.map`), `${name}: its source map`)
      const script = scripts[name === "standalone" ? "start" : name === "admin" ? "admin" : `start:${name}`]
      assert.strictEqual(script, `node ${entry[0]} dist/${name}.mjs`)
      assert.isTrue(isFresh(name), `${name}: the global setup left it built from the sources as they are`)
    }
  })

  it("are rebuilt when a file their bundle was made of changed since the build, and only then", () => {
    const dir = mkdtempSync(join(root, ".tmp", "build-"))
    try {
      const input = join(dir, "input.ts")
      writeFileSync(input, "export {}")
      writeFileSync(join(dir, "runner.mjs"), "")
      const manifest = { inputs: { [relative(root, input)]: statSync(input).mtimeMs } }
      writeFileSync(join(dir, "runner.build.json"), JSON.stringify(manifest))
      assert.isTrue(isFresh("runner", dir))
      assert.isFalse(isFresh("api", dir), "no bundle, no manifest")
      utimesSync(input, new Date(), new Date(Date.now() + 5000))
      assert.isFalse(isFresh("runner", dir), "an input changed")
      rmSync(input)
      assert.isFalse(isFresh("runner", dir), "an input is gone")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
