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

/**
 * What @effect/cluster says when its runner finds no healthy runner. A stopping runner unregisters
 * first and its runner-sync loop runs on until the cluster's scope closes, so the last runner of a
 * cluster (a standalone: `npm start`) found itself gone and said so while it stopped, at a loaded
 * machine's pace (`test/npmStartStop.test.ts`): the stop, not a fault.
 */
export const NO_HEALTHY_RUNNERS = "No healthy runners available"

let stopping = false

/** The process got its stop signal (`Launch`): from now on `isStopNoise` drops the cluster's warning. */
export const markStopping = (): void => {
  stopping = true
}

/** Whether a log entry is the cluster's "no healthy runner" warning of a process that is stopping. */
export const isStopNoise = (
  options: { readonly message: unknown; readonly logLevel: LogLevel.LogLevel },
  isStopping: boolean
): boolean => {
  const message = Array.isArray(options.message) && options.message.length === 1 ? options.message[0] : options.message
  return isStopping && options.logLevel === LogLevel.Warning && message === NO_HEALTHY_RUNNERS
}

/** `self` without the entries `isStopNoise` names. */
const quietWhileStopping = <M>(self: Logger.Logger<M, void>): Logger.Logger<M, void> =>
  Logger.make((options) => isStopNoise(options, stopping) ? undefined : self.log(options))

/** The JSON lines on standard output. */
export const jsonLogger = quietWhileStopping(Logger.withConsoleLog(withTraceIds(Logger.jsonLogger)))

/** One readable line (time, level, message, annotations) per entry, coloured on a terminal. */
export const prettyLogger = quietWhileStopping(withTraceIds(Logger.prettyLogger({ mode: "tty" })))

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
