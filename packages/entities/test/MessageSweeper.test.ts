/**
 * Which channels with due work the message sweeper wakes (`stalledChannels`): only those that did
 * not dispatch since its last look, a second earlier. A busy channel's loop is working; waking it
 * made it read its queue again (bench/RESULTS.md 3, "The sweeper wakes only stalled channels").
 * When its sweeps may read only the last week's messages (`horizonAfter`): once a sweep of every
 * month left nothing older to settle.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@switchboard/domain"
import { MessageSweeper } from "@switchboard/entities"

const page = (...heads: ReadonlyArray<readonly [string, string]>) =>
  heads.map(([channelId, head]) => ({ channelId, head }))

describe("the message sweeper's wake-ups", () => {
  it("wakes a channel whose first due message is where the last sweep found it, not one that moved on", () => {
    const seen = new Map<string, string>()
    // first look: nothing known yet, nobody woken
    assert.deepStrictEqual(MessageSweeper.stalledChannels(seen, page(["ch_a", "m1"], ["ch_b", "m5"]), "", true), [])
    // a second later: ch_a dispatched m1 (its head is m2), ch_b is stuck on m5 (a lost wake-up)
    assert.deepStrictEqual(
      MessageSweeper.stalledChannels(seen, page(["ch_a", "m2"], ["ch_b", "m5"]), "", true),
      ["ch_b"]
    )
    // still stuck: woken again every sweep until it moves
    assert.deepStrictEqual(
      MessageSweeper.stalledChannels(seen, page(["ch_a", "m3"], ["ch_b", "m5"]), "", true),
      ["ch_b"]
    )
  })

  it("forgets a channel that had no due work at its last look, whatever page it is on", () => {
    const seen = new Map<string, string>()
    // two pages: ch_a, ch_b (full, the cursor moves on), then ch_c (short, back to the start)
    MessageSweeper.stalledChannels(seen, page(["ch_a", "m1"], ["ch_b", "m2"]), "", false)
    MessageSweeper.stalledChannels(seen, page(["ch_c", "m3"]), "ch_b", true)
    // pages of one now: ch_a still stuck; ch_b and ch_c lie past the page and are kept
    assert.deepStrictEqual(MessageSweeper.stalledChannels(seen, page(["ch_a", "m1"]), "", false), ["ch_a"])
    assert.deepStrictEqual([...seen.keys()].sort(), ["ch_a", "ch_b", "ch_c"])
    // the next page, short: ch_b's queue drained (forgotten), ch_c still stuck
    assert.deepStrictEqual(MessageSweeper.stalledChannels(seen, page(["ch_c", "m3"]), "ch_a", true), ["ch_c"])
    assert.deepStrictEqual([...seen.keys()].sort(), ["ch_a", "ch_c"])
    // and once nothing is due, nothing is remembered
    assert.deepStrictEqual(MessageSweeper.stalledChannels(seen, page(), "", true), [])
    assert.strictEqual(seen.size, 0)
  })
})

describe("the message sweeper's horizon", () => {
  const now = Date.UTC(2027, 2, 15, 12)
  const DAY = 24 * 3600 * 1000
  const made = (ms: number) => `${Ids.idFloor("msg", ms)}0000000000000000`

  it("reads only the horizon's messages after a sweep of every month found only younger ones", () => {
    assert.isTrue(MessageSweeper.horizonAfter(now, [[], [made(now - 2 * DAY)], [], []], false))
    assert.isTrue(MessageSweeper.horizonAfter(now, [[], [], [], []], false))
  })

  it("keeps reading every month while a message older than the horizon was found (its entity may have failed)", () => {
    const old = made(now - MessageSweeper.SWEEP_HORIZON_MS - 1000)
    assert.isFalse(MessageSweeper.horizonAfter(now, [[], [], [], [old]], false))
  })

  it("keeps reading every month while a read came back full or channels awaiting receipts are left to page", () => {
    const full = Array.from({ length: 500 }, () => made(now - DAY))
    assert.isFalse(MessageSweeper.horizonAfter(now, [full, [], [], []], false))
    assert.isFalse(MessageSweeper.horizonAfter(now, [[], [], [], []], true))
  })
})
