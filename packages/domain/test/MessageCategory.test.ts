import { assert, describe, it } from "@effect/vitest"
import { MessageCategory } from "@switchboard/domain"

const msg = (id: string, category: MessageCategory.Category, created_at: string) => ({ id, category, created_at })

describe("category priority", () => {
  it("ranks authentication over utility over marketing", () => {
    assert.isBelow(MessageCategory.PRIORITY.authentication, MessageCategory.PRIORITY.utility)
    assert.isBelow(MessageCategory.PRIORITY.utility, MessageCategory.PRIORITY.marketing)
  })

  it("orders a queue by priority, then first in first out", () => {
    const queue = [
      msg("m1", "marketing", "2026-11-22T10:00:00.000Z"),
      msg("m2", "marketing", "2026-11-22T10:00:01.000Z"),
      msg("u1", "utility", "2026-11-22T10:00:02.000Z"),
      msg("a1", "authentication", "2026-11-22T10:00:03.000Z"),
      msg("a0", "authentication", "2026-11-22T10:00:03.000Z")
    ]
    assert.deepStrictEqual([...queue].sort(MessageCategory.compareQueued).map((m) => m.id), [
      "a0",
      "a1",
      "u1",
      "m1",
      "m2"
    ])
  })
})
