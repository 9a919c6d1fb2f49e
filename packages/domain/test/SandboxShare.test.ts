import { assert, describe, it } from "@effect/vitest"
import { SandboxShare } from "@switchboard/domain"

describe("SandboxShare", () => {
  it("gives a workspace half of the pool, at least one number", () => {
    assert.deepStrictEqual([1, 2, 3, 4, 5, 40].map(SandboxShare.poolShare), [1, 1, 1, 2, 2, 20])
  })

  it("reads unlimited as half of the pool", () => {
    assert.deepStrictEqual(SandboxShare.sessionLimit({ value: null, source: "plan" }, 5), {
      limit: 2,
      by: "pool_share"
    })
    assert.deepStrictEqual(SandboxShare.sessionLimit({ value: null, source: "override" }, 5), {
      limit: 2,
      by: "pool_share"
    })
  })

  it("keeps a plan's number up to the share and caps it there", () => {
    assert.deepStrictEqual(SandboxShare.sessionLimit({ value: 1, source: "plan" }, 5), { limit: 1, by: "plan" })
    assert.deepStrictEqual(SandboxShare.sessionLimit({ value: 4, source: "plan" }, 5), { limit: 2, by: "pool_share" })
  })

  it("honours an operator's number as given, the whole pool included", () => {
    assert.deepStrictEqual(SandboxShare.sessionLimit({ value: 5, source: "override" }, 5), {
      limit: 5,
      by: "override"
    })
  })
})
