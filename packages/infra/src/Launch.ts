/**
 * How a service process starts and stops (the api node, a runner, `npm start`): one definition of
 * what the three `main.ts` share.
 *
 * - first, before any layer is built: a production process with unsafe settings stops with one
 *   message (`StartupSafety.refuseUnsafeProduction`);
 * - the development warnings (`StartupSafety.warningsLayer`), then the service's layer, launched
 *   with the tracing (`Tracing.layerFromEnv(serviceName)`) and the JSON logger (`Logging`);
 * - a busy or forbidden port, or a setting that does not parse, stops the process with one line,
 *   not a stack trace (`ListenFailure`, `ConfigFailure`); SIGTERM and SIGINT end it
 *   (`NodeRuntime.runMain`), and the same stop delivered twice does not cut the drain short
 *   (`guardRepeatedSignals`).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as ListenFailure from "./ListenFailure.js"
import * as Logging from "./Logging.js"
import * as StartupSafety from "./StartupSafety.js"
import * as Tracing from "./Tracing.js"

/**
 * How long after the first stop signal a second one is taken as the same stop (milliseconds).
 * `npm start` stopped from a terminal (Ctrl-C) or a process-group kill delivers every signal twice
 * within milliseconds: once from the terminal or `kill`, once forwarded by npm.
 */
export const REPEATED_SIGNAL_WINDOW_MS = 2_000

/**
 * What a stop signal arriving at `now` means, given when the first one arrived (epoch
 * milliseconds): the first starts the drain, a repeat inside `REPEATED_SIGNAL_WINDOW_MS` is the same
 * stop, a later one (a person pressing Ctrl-C again) ends the process at once.
 */
export const signalMeaning = (
  firstAt: number | undefined,
  now: number
): "drain" | "same-stop" | "stop-now" =>
  firstAt === undefined ? "drain" : now - firstAt < REPEATED_SIGNAL_WINDOW_MS ? "same-stop" : "stop-now"

/**
 * `runMain` removes its SIGINT/SIGTERM listeners at the first signal, so a second one took the
 * default action and killed the process in the middle of its drain (measured: `npm start` killed
 * by process group exited without "Switchboard is stopping"). These listeners stay until the
 * process exits and act as `signalMeaning` says.
 */
const guardRepeatedSignals = (): void => {
  let firstAt: number | undefined
  const onSignal = (signal: NodeJS.Signals) => {
    const now = Date.now()
    switch (signalMeaning(firstAt, now)) {
      case "drain":
        firstAt = now
        Logging.markStopping()
        return
      case "same-stop":
        return
      case "stop-now":
        Effect.runSync(
          Effect.logWarning(`${signal} again while stopping: stopping now, without finishing in-flight work`).pipe(
            Effect.provide(Logging.layer),
            Effect.orElse(() => Effect.void)
          )
        )
        process.exit(signal === "SIGINT" ? 130 : 143)
    }
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
}

/** Runs the process `role` whose layer `build` makes; its spans are named after `serviceName`. */
export const main = <E>(
  role: StartupSafety.Role,
  serviceName: string,
  build: () => Layer.Layer<never, E, never>
): void => {
  StartupSafety.refuseUnsafeProduction(role)
  guardRepeatedSignals()
  build().pipe(
    Layer.merge(StartupSafety.warningsLayer(role)),
    Layer.launch,
    Effect.provide(Tracing.layerFromEnv(serviceName).pipe(Layer.provideMerge(Logging.layer))),
    Effect.tapErrorCause(ListenFailure.logStop),
    NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
  )
}
