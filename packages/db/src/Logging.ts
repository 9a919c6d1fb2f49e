/**
 * JSON log lines for every process (`LOG_LEVEL`, default `info`). Request fibers annotate their
 * lines with `request_id`.
 */
import { Config, Effect, Layer, Logger, LogLevel } from "effect"

export const layer = Layer.unwrapEffect(
  Effect.map(
    Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info)),
    (level) => Layer.merge(Logger.json, Logger.minimumLogLevel(level))
  )
).pipe(Layer.orDie)
