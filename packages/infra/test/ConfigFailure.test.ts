import { assert, describe, it } from "@effect/vitest"
import { ConfigFailure, ListenFailure } from "@switchboard/infra"
import { Cause, Config, ConfigProvider, Effect, FiberId, Logger } from "effect"

/** The error reading `config` from `env` gives. */
const failureOf = <A>(config: Config.Config<A>, env: Record<string, string>) =>
  Effect.flip(Effect.withConfigProvider(config, ConfigProvider.fromMap(new Map(Object.entries(env)))))

/** The lines `effect` logs: each one's message and whether it carries a cause. */
const logged = (effect: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const lines: Array<{ message: unknown; withCause: boolean }> = []
    const logger = Logger.make(({ cause, message }) => lines.push({ message, withCause: !Cause.isEmpty(cause) }))
    yield* effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    return lines
  })

describe("ConfigFailure", () => {
  it.effect("names a setting that does not parse and what it must be, without the value given", () =>
    Effect.gen(function*() {
      const error = yield* failureOf(Config.port("HTTP_PORT"), { HTTP_PORT: "s3cr3t-not-a-port" })
      assert.strictEqual(ConfigFailure.describe(error), "HTTP_PORT: Expected a network port value")
      const lines = yield* logged(ListenFailure.logStop(Cause.fail(error)))
      assert.deepStrictEqual(lines, [{
        message: ["cannot start: HTTP_PORT: Expected a network port value"],
        withCause: false
      }])
      assert.notInclude(JSON.stringify(lines), "s3cr3t")
    }))

  it.effect("names every setting that is missing or wrong, on one line", () =>
    Effect.gen(function*() {
      const error = yield* failureOf(
        Config.all([Config.string("JWT_SECRET"), Config.integer("METRICS_PORT")]),
        { METRICS_PORT: "many" }
      )
      assert.strictEqual(
        ConfigFailure.describe(error),
        "JWT_SECRET is not set; METRICS_PORT: Expected an integer value"
      )
    }))

  it.effect("leaves a stop for any other reason to be logged as it was", () =>
    Effect.gen(function*() {
      const lines = yield* logged(ListenFailure.logStop(Cause.fail(new Error("boom"))))
      assert.deepStrictEqual(lines, [{ message: [], withCause: true }])
      assert.deepStrictEqual(ConfigFailure.linesOf(Cause.fail(new Error("boom"))), [])
      assert.deepStrictEqual(yield* logged(ListenFailure.logStop(Cause.interrupt(FiberId.none))), [])
    }))
})
