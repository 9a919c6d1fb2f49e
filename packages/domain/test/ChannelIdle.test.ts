import { describe, expect, it } from "@effect/vitest"
import { NOTHING_DUE_POLL_MS, nothingDue, nothingDueWaitMs, UNDER_WAY_POLL_MS } from "../src/ChannelIdle.js"

describe("nothingDue", () => {
  it("lets an idle sandbox connection be closed and the entity go", () => {
    expect(nothingDue({ underWay: false, linkHeld: false, dropWhenIdle: true })).toEqual({
      keepAlive: false,
      mayClose: true
    })
  })

  it("keeps a connection with receipts or waiting recipients, and the entity alive for them", () => {
    expect(nothingDue({ underWay: true, linkHeld: false, dropWhenIdle: true })).toEqual({
      keepAlive: true,
      mayClose: false
    })
  })

  it("keeps a linked device's (QR) link and its entity alive, never closing it for idleness", () => {
    expect(nothingDue({ underWay: false, linkHeld: true, dropWhenIdle: false })).toEqual({
      keepAlive: true,
      mayClose: false
    })
    expect(nothingDue({ underWay: false, linkHeld: false, dropWhenIdle: false }).mayClose).toBe(false)
  })
})

describe("nothingDueWaitMs", () => {
  const now = 1_800_000_000_000
  const idle = { underWay: false, mayClose: false, idleMs: 10_000, readyAt: Infinity, pausedUntil: 0, readAt: now }

  it("waits the 10 s backstop with nothing due, and looks every second with something under way", () => {
    expect(nothingDueWaitMs(idle, now)).toBe(NOTHING_DUE_POLL_MS)
    expect(nothingDueWaitMs({ ...idle, underWay: true }, now)).toBe(UNDER_WAY_POLL_MS)
  })

  it("looks again when a connection it may close reaches its idle time, if that comes first", () => {
    expect(nothingDueWaitMs({ ...idle, mayClose: true, idleMs: 3_000 }, now)).toBe(3_000)
    expect(nothingDueWaitMs({ ...idle, mayClose: true, idleMs: 60_000 }, now)).toBe(NOTHING_DUE_POLL_MS)
    expect(nothingDueWaitMs({ ...idle, idleMs: 3_000 }, now)).toBe(NOTHING_DUE_POLL_MS)
  })

  it("wakes when a waiting recipient may go or the throttling pause ends, at least 10 ms on", () => {
    expect(nothingDueWaitMs({ ...idle, underWay: true, readyAt: now + 400 }, now + 100)).toBe(300)
    expect(nothingDueWaitMs({ ...idle, pausedUntil: now + 2_500 }, now)).toBe(2_500)
    // a pause that ended before the queue was read is no reason to wake
    expect(nothingDueWaitMs({ ...idle, pausedUntil: now - 1 }, now)).toBe(NOTHING_DUE_POLL_MS)
    expect(nothingDueWaitMs({ ...idle, underWay: true, readyAt: now - 5 }, now)).toBe(10)
  })
})
