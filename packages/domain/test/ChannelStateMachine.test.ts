import { assert, describe, it } from "@effect/vitest"
import { acceptsSends, CHANNEL_STATUSES, dispatches, transitionQrPairing } from "@switchboard/domain"

describe("channel statuses", () => {
  it("accepts and dispatches sends only while connected", () => {
    assert.deepStrictEqual(CHANNEL_STATUSES.filter(acceptsSends), ["connected"])
    assert.deepStrictEqual(CHANNEL_STATUSES.filter(dispatches), ["connected"])
  })

  it("archives from every status except archived, and never leaves archived", () => {
    for (const from of CHANNEL_STATUSES) {
      const t = transitionQrPairing(from, { _tag: "Archive" })
      assert.strictEqual(t._tag === "Moved" && t.to === "archived", from !== "archived", from)
      for (const event of [{ _tag: "Start" }, { _tag: "Opened" }, { _tag: "Resume" }] as const) {
        assert.notStrictEqual(transitionQrPairing("archived", event)._tag, "Moved", `archived ${event._tag}`)
      }
    }
  })
})
