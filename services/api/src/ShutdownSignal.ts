/**
 * Completes when the server starts shutting down, so long-lived responses (event streams) end
 * and `server.close()` is not held open by them. Built after the listener, so its
 * finalizer runs before the listener's.
 */
import { Deferred, Effect } from "effect"

export class ShutdownSignal extends Effect.Service<ShutdownSignal>()("@switchboard/service-api/ShutdownSignal", {
  scoped: Effect.gen(function*() {
    const signal = yield* Deferred.make<void>()
    yield* Effect.addFinalizer(() => Deferred.succeed(signal, undefined))
    return { await: Deferred.await(signal), isShuttingDown: Deferred.isDone(signal) }
  })
}) {}
