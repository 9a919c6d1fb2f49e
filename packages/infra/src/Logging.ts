/**
 * JSON log lines for every process (`LOG_LEVEL`: trace, debug, info (default), warn|warning,
 * error, fatal, none). Request fibers annotate their lines with `request_id`; a line written
 * inside a recorded span (tracing on, `Tracing.ts`) carries `trace_id` and `span_id`.
 */
import { Config, ConfigError, Effect, Either, HashMap, Layer, Logger, LogLevel } from "effect"
import { recordedSpan } from "./Tracing.js"

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

/** Adds `trace_id` and `span_id` to a line written inside a recorded span. */
export const withTraceIds = <M, O>(self: Logger.Logger<M, O>): Logger.Logger<M, O> =>
  Logger.make((options) => {
    const span = recordedSpan(options.context)
    if (span === undefined) return self.log(options)
    return self.log({
      ...options,
      annotations: HashMap.set(HashMap.set(options.annotations, "trace_id", span.traceId), "span_id", span.spanId)
    })
  })

/** The JSON lines on standard output. */
export const jsonLogger = Logger.withConsoleLog(withTraceIds(Logger.jsonLogger))

export const layer = Layer.unwrapEffect(
  Effect.map(
    level,
    (minimum) => Layer.merge(Logger.replace(Logger.defaultLogger, jsonLogger), Logger.minimumLogLevel(minimum))
  )
).pipe(Layer.orDie)
