/**
 * Which channels with due work the message sweeper wakes (`stalledChannels`): only those that did
 * not dispatch since its last look, a second earlier. A busy channel's loop is working; waking it
 * made it read its queue again (bench/RESULTS.md 3, "The sweeper wakes only stalled channels").
 */
import { assert, describe, it } from "@effect/vitest"
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
