/**
 * The order the workers take the test files in (test/support/Sequencer.ts): the end-to-end files
 * spread out as every third file, so that two, not three, run at once beside the short ones.
 */
import { assert, describe, it } from "@effect/vitest"
import { isEndToEnd, spreadOut } from "./support/Sequencer.js"

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
