/**
 * Development logs read as text on a terminal; everything else gets JSON lines (docs/CONFIGURATION.md
 * "Configuration"). A stopping process does not repeat the cluster's "no healthy runner" warning.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, LogLevel } from "effect"
import { chooseFormat, formatSetting, isStopNoise, NO_HEALTHY_RUNNERS } from "../src/Logging.js"

describe("log format", () => {
  it("is pretty on a terminal outside production, JSON otherwise, unless LOG_FORMAT says", () => {
    assert.strictEqual(chooseFormat("auto", true, false), "pretty")
    assert.strictEqual(chooseFormat("auto", false, false), "json")
    assert.strictEqual(chooseFormat("auto", true, true), "json")
    assert.strictEqual(chooseFormat("json", true, false), "json")
    assert.strictEqual(chooseFormat("pretty", false, true), "pretty")
  })

  it.effect("reads LOG_FORMAT (auto by default) and refuses another value", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.withConfigProvider(formatSetting, ConfigProvider.fromMap(new Map(Object.entries(env))))
      assert.strictEqual(yield* read({}), "auto")
      assert.strictEqual(yield* read({ LOG_FORMAT: "pretty" }), "pretty")
      assert.isTrue((yield* Effect.either(read({ LOG_FORMAT: "yaml" })))._tag === "Left")
    }))
})

describe("the cluster's warning while a process stops", () => {
  it("is dropped once the stop signal came, and only that warning", () => {
    const warning = { message: [NO_HEALTHY_RUNNERS], logLevel: LogLevel.Warning }
    assert.isTrue(isStopNoise(warning, true))
    assert.isTrue(isStopNoise({ ...warning, message: NO_HEALTHY_RUNNERS }, true))
    // before the stop it says something: a cluster whose runners all went away
    assert.isFalse(isStopNoise(warning, false))
    assert.isFalse(isStopNoise({ ...warning, logLevel: LogLevel.Error }, true))
    assert.isFalse(isStopNoise({ ...warning, message: ["Shard lock storage is unhealthy"] }, true))
  })
})
