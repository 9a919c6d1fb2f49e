/**
 * How the suite runs (docs/TESTING.md "Tests"): the order the workers take the files in
 * (test/support/Sequencer.ts: the end-to-end files spread out as every third file, so that two, not
 * three, run at once beside the short ones), and the service processes started from the bundles
 * this run built (test/support/ServiceBundles.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { isEndToEnd, spreadOut } from "./support/Sequencer.js"
import { serviceEntry } from "./support/ServiceBundles.js"

describe("the test files' order", () => {
  it("puts an end-to-end file every third place, each kind in its own order, and the rest of either at the end", () => {
    assert.deepStrictEqual(spreadOut(["E1", "E2"], ["a", "b", "c", "d", "e"]), ["E1", "a", "b", "E2", "c", "d", "e"])
    assert.deepStrictEqual(spreadOut(["E1", "E2", "E3"], ["a"]), ["E1", "a", "E2", "E3"])
    assert.deepStrictEqual(spreadOut([], ["a", "b"]), ["a", "b"])
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
