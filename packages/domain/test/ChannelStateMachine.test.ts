import { assert, describe, it } from "@effect/vitest"
import { acceptsSends, canChannelTransition, CHANNEL_STATUSES, dispatches } from "@switchboard/domain"

describe("channel state machine", () => {
  it("walks the QR pairing path of DECISIONS 5", () => {
    const path = ["pending", "connecting", "awaiting_scan", "connected", "degraded", "connected"] as const
    path.forEach((to, i) => {
      if (i > 0) assert.isTrue(canChannelTransition(path[i - 1]!, to), `${path[i - 1]} -> ${to}`)
    })
    assert.isTrue(canChannelTransition("awaiting_scan", "disconnected"))
    assert.isTrue(canChannelTransition("degraded", "disconnected"))
  })

  it("archives from every status except archived, and never leaves archived", () => {
    for (const from of CHANNEL_STATUSES) {
      assert.strictEqual(canChannelTransition(from, "archived"), from !== "archived", from)
      assert.isFalse(canChannelTransition("archived", from), `archived -> ${from}`)
    }
  })

  it("restarts pairing from anything but archived and suspended", () => {
    assert.isFalse(canChannelTransition("suspended", "connecting"))
    assert.isFalse(canChannelTransition("archived", "connecting"))
    assert.isTrue(canChannelTransition("disconnected", "connecting"))
    assert.isTrue(canChannelTransition("connected", "connecting"))
  })

  it("accepts and dispatches sends only while connected", () => {
    assert.deepStrictEqual(CHANNEL_STATUSES.filter(acceptsSends), ["connected"])
    assert.deepStrictEqual(CHANNEL_STATUSES.filter(dispatches), ["connected"])
  })
})
