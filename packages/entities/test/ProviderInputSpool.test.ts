/**
 * A channel's spool of provider input waiting for the database (docs/OPERATING.md "Provider input
 * during a database outage"): what is kept is on disk until marked recorded, read back in the order
 * kept by the next process (a kill between), a last line cut short skipped, and the file gone once
 * nothing is open.
 */
import { assert, describe, it } from "@effect/vitest"
import { ProviderInputSpool } from "@switchboard/entities"
import { ChannelProvider } from "@switchboard/providers"
import { Effect } from "effect"
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const text = (id: string) => ChannelProvider.inboundText(id, "+4915112345678", `text ${id}`, 1_000)

describe("ProviderInputSpool", () => {
  it.effect("gives the next process what was kept and not recorded, in order, once", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "spool-"))
      const first = ProviderInputSpool.channelSpool(dir, "ch_1")
      assert.deepStrictEqual(yield* first.replay, [])
      const keys = yield* first.keep([text("A"), text("B")])
      const [c] = yield* first.keep([ChannelProvider.receipt("msg_1", "read", 2_000)])
      yield* first.recorded(keys[0]!)
      // killed here: B and the receipt are open
      const next = ProviderInputSpool.channelSpool(dir, "ch_1")
      const replayed = yield* next.replay
      assert.deepStrictEqual(replayed.map((r) => r.event), [text("B"), ChannelProvider.receipt("msg_1", "read", 2_000)])
      assert.deepStrictEqual(replayed.map((r) => r.key), [keys[1], c])
      // read once per process
      assert.deepStrictEqual(yield* next.replay, [])
      // new items take keys after the file's
      const [d] = yield* next.keep([text("D")])
      assert.isAbove(d!, c!)
      for (const key of [...replayed.map((r) => r.key), d!]) yield* next.recorded(key)
      assert.isFalse(existsSync(join(dir, "ch_1.jsonl")), "the file goes once nothing is open")
      assert.deepStrictEqual(readdirSync(dir), [])
    }))

  it.effect("skips a last line a kill cut short, and counts it", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "spool-"))
      const first = ProviderInputSpool.channelSpool(dir, "ch_2")
      yield* first.keep([text("A")])
      appendFileSync(join(dir, "ch_2.jsonl"), "{\"k\":1,\"e\":{\"_tag\":\"Inbou")
      const parsed = ProviderInputSpool.parse(
        readFileSync(join(dir, "ch_2.jsonl"), "utf8")
      )
      assert.strictEqual(parsed.unreadable, 1)
      assert.deepStrictEqual(parsed.open.map((r) => r.event), [text("A")])
      const replayed = yield* ProviderInputSpool.channelSpool(dir, "ch_2").replay
      assert.deepStrictEqual(replayed.map((r) => r.event), [text("A")])
    }))

  it.effect("writes nothing until something must wait", () =>
    Effect.gen(function*() {
      const dir = join(mkdtempSync(join(tmpdir(), "spool-")), "not-yet")
      const spool = ProviderInputSpool.channelSpool(dir, "ch_3")
      assert.deepStrictEqual(yield* spool.replay, [])
      yield* spool.recorded(0)
      assert.isFalse(existsSync(dir))
    }))
  it.effect("keeps what contacts wrote readable by the service's user only", () =>
    Effect.gen(function*() {
      const dir = join(mkdtempSync(join(tmpdir(), "spool-")), "spool")
      const spool = ProviderInputSpool.channelSpool(dir, "ch_4")
      yield* spool.keep([text("A")])
      assert.strictEqual(statSync(dir).mode & 0o777, 0o700)
      assert.strictEqual(statSync(join(dir, "ch_4.jsonl")).mode & 0o777, 0o600)
    }))
})
