/**
 * What a runner reports of provider input not recorded yet (docs/OPERATING.md "Provider input
 * during a database outage"): counts per channel in the order taken, their sum and the oldest age
 * across channels, and readiness degraded only past `readyMaxAge`.
 */
import { assert, describe, it } from "@effect/vitest"
import { ProviderInputBacklog } from "@switchboard/entities"
import { Duration, Effect, Layer, Logger, TestClock } from "effect"
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const { makeChannelInput, summarize } = ProviderInputBacklog

describe("ProviderInputBacklog", () => {
  it("counts a channel's items from taken to recorded; the oldest is the first not recorded", () => {
    const input = makeChannelInput()
    const a = input.add(1_000)
    const b = input.add(2_000)
    input.add(3_000)
    assert.strictEqual(input.waiting(), 3)
    assert.strictEqual(input.oldestAt(), 1_000)
    input.done(b)
    assert.strictEqual(input.oldestAt(), 1_000)
    input.done(a)
    assert.strictEqual(input.oldestAt(), 3_000)
    assert.strictEqual(input.waiting(), 1)
  })

  it("sums the channels that hold anything and ages the oldest item of any", () => {
    const idle = makeChannelInput()
    const one = makeChannelInput()
    const two = makeChannelInput()
    one.add(5_000)
    two.add(2_000)
    two.add(9_000)
    assert.deepStrictEqual(summarize([idle, one, two], 10_000), { waiting: 3, oldestAgeMs: 8_000, channels: 2 })
    assert.deepStrictEqual(summarize([idle], 10_000), { waiting: 0, oldestAgeMs: 0, channels: 0 })
  })

  it.scoped("says the runner is degraded once an item waited longer than readyMaxAge, and not before", () =>
    Effect.gen(function*() {
      const backlog = yield* ProviderInputBacklog.ProviderInputBacklog
      const input = yield* backlog.track
      const ticket = input.add(0)
      yield* TestClock.adjust(Duration.seconds(30))
      assert.isUndefined(yield* backlog.degraded)
      yield* TestClock.adjust(Duration.seconds(1))
      assert.include(yield* backlog.degraded, "provider input waited 31 s")
      input.done(ticket)
      assert.isUndefined(yield* backlog.degraded)
    }).pipe(
      Effect.provide(ProviderInputBacklog.layerWithoutConfig.pipe(
        Layer.provide(ProviderInputBacklog.configLayer({ readyMaxAge: Duration.seconds(30) }))
      ))
    ))

  /** The messages the backlog logs at start with a spool in `spoolDir`. */
  const startLog = (spoolDir: string) =>
    Effect.gen(function*() {
      const lines: Array<{ message: string; annotations: Record<string, unknown> }> = []
      const logger = Logger.make(({ annotations, message }) => {
        lines.push({ message: String(message), annotations: Object.fromEntries(annotations) })
      })
      yield* Effect.scoped(Layer.build(ProviderInputBacklog.layerWithoutConfig.pipe(
        Layer.provide(ProviderInputBacklog.configLayer({ spoolDir }))
      ))).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      return lines
    })

  it.effect("says at start, naming the folder, when the spool cannot be written", () =>
    Effect.gen(function*() {
      const root = mkdtempSync(join(tmpdir(), "sb-spool-check-"))
      try {
        // a read-only root filesystem refuses the same way: the folder cannot be made
        writeFileSync(join(root, "not-a-folder"), "")
        const refused = yield* startLog(join(root, "not-a-folder", "provider-input"))
        assert.strictEqual(refused.length, 1, JSON.stringify(refused))
        assert.include(refused[0]!.message, "the provider input spool is not writable")
        assert.strictEqual(refused[0]!.annotations["spool_dir"], join(root, "not-a-folder", "provider-input"))
        assert.strictEqual(refused[0]!.annotations["reason"], "ENOTDIR")

        const writable = yield* startLog(join(root, "provider-input"))
        assert.deepStrictEqual(writable, [])
        // made for the service's user only, and the probe left nothing behind
        assert.strictEqual(statSync(join(root, "provider-input")).mode & 0o777, 0o700)
      } finally {
        rmSync(root, { recursive: true, force: true })
      }
    }))
})
