/** Liveness and readiness probes: no credential, unversioned. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"

export const DependencyCheck = Schema.Struct({
  status: Schema.Literal("up", "down", "disabled"),
  latency_ms: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "DependencyCheck" })

const checks = Schema.Struct({
  database: DependencyCheck,
  redis: DependencyCheck,
  cluster: DependencyCheck
})

export class Ready extends Schema.Class<Ready>("Ready")({
  status: Schema.Literal("ready"),
  checks
}) {}

/** Same body shape as `Ready`, answered with 503. */
export class NotReady extends Schema.Class<NotReady>("NotReady")({
  status: Schema.Literal("not_ready"),
  checks
}, HttpApiSchema.annotations({ status: 503 })) {}

export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(Schema.Struct({ status: Schema.Literal("ok") }))
      .annotate(
        OpenApi.Description,
        "Liveness: always 200; touches no dependency. Any query string is ignored (uptime checkers add their own)."
      )
  )
  .add(
    HttpApiEndpoint.get("ready", "/ready")
      .addSuccess(Ready)
      .addError(NotReady)
      .annotate(
        OpenApi.Description,
        "Readiness: 200 when every dependency is reachable, else 503 with the same body. Any query string is ignored. Each check is `up`, `down` or `disabled` (not configured in this mode)."
      )
  )
  .annotate(OpenApi.Title, "Health")
{}
