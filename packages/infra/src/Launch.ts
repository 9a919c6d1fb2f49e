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
 *   (`NodeRuntime.runMain`).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as ListenFailure from "./ListenFailure.js"
import * as Logging from "./Logging.js"
import * as StartupSafety from "./StartupSafety.js"
import * as Tracing from "./Tracing.js"

/** Runs the process `role` whose layer `build` makes; its spans are named after `serviceName`. */
export const main = <E>(
  role: StartupSafety.Role,
  serviceName: string,
  build: () => Layer.Layer<never, E, never>
): void => {
  StartupSafety.refuseUnsafeProduction(role)
  build().pipe(
    Layer.merge(StartupSafety.warningsLayer(role)),
    Layer.launch,
    Effect.provide(Tracing.layerFromEnv(serviceName).pipe(Layer.provideMerge(Logging.layer))),
    Effect.tapErrorCause(ListenFailure.logStop),
    NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
  )
}
