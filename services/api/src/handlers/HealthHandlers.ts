import { HttpApiBuilder } from "@effect/platform"
import { Api, HealthApi } from "@switchboard/api"
import { Effect } from "effect"
import { Readiness } from "../Readiness.js"

export const HealthHandlers = HttpApiBuilder.group(Api.Api, "health", (handlers) =>
  Effect.gen(function*() {
    const readiness = yield* Readiness
    return handlers
      .handle("health", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () =>
        Effect.flatMap(readiness.check, (checks) =>
          Object.values(checks).some((c) =>
              c.status === "down"
            )
            ? Effect.fail(new HealthApi.NotReady({ status: "not_ready", checks }))
            : Effect.succeed(new HealthApi.Ready({ status: "ready", checks }))))
  }))
