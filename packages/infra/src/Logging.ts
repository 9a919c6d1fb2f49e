/**
 * JSON log lines for every process (`LOG_LEVEL`: trace, debug, info (default), warn|warning,
 * error, fatal, none). Request fibers annotate their lines with `request_id`.
 */
import { Config, ConfigError, Effect, Either, Layer, Logger, LogLevel } from "effect"

const LEVELS: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
}

export const level = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapOrFail((raw) => {
    const found = LEVELS[raw.trim().toLowerCase()]
    return found
      ? Either.right(found)
      : Either.left(ConfigError.InvalidData(["LOG_LEVEL"], `Expected one of ${Object.keys(LEVELS).join(", ")}`))
  })
)

export const layer = Layer.unwrapEffect(
  Effect.map(level, (minimum) => Layer.merge(Logger.json, Logger.minimumLogLevel(minimum)))
).pipe(Layer.orDie)
