/**
 * Log lines for every process (`LOG_LEVEL`: trace, debug, info (default), warn|warning, error,
 * fatal, none). Request fibers annotate their lines with `request_id`; a line written inside a
 * recorded span (tracing on, `Tracing.ts`) carries `trace_id` and `span_id`. `LOG_FORMAT`: `json`
 * lines for machines, `pretty` lines for a person, or `auto` (default): pretty when standard
 * output is a terminal outside production, JSON otherwise (a pipe, a file, a container's log).
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

/** One readable line (time, level, message, annotations) per entry, coloured on a terminal. */
export const prettyLogger = withTraceIds(Logger.prettyLogger({ mode: "tty" }))

export type LogFormat = "json" | "pretty"

export const formatSetting = Config.literal("auto", "json", "pretty")("LOG_FORMAT").pipe(Config.withDefault("auto"))

/** `auto` is pretty only for a person: a terminal, outside production. */
export const chooseFormat = (
  setting: "auto" | LogFormat,
  stdoutIsTerminal: boolean,
  production: boolean
): LogFormat => setting !== "auto" ? setting : stdoutIsTerminal && !production ? "pretty" : "json"

export const layer = Layer.unwrapEffect(
  Effect.gen(function*() {
    const minimum = yield* level
    const format = chooseFormat(
      yield* formatSetting,
      process.stdout.isTTY === true,
      (yield* Config.string("NODE_ENV").pipe(Config.withDefault(""))) === "production"
    )
    return Layer.merge(
      Logger.replace(Logger.defaultLogger, format === "pretty" ? prettyLogger : jsonLogger),
      Logger.minimumLogLevel(minimum)
    )
  })
).pipe(Layer.orDie)
