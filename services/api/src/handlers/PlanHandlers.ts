import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { Entitlements } from "../services/Entitlements.js"
import { UsageReport } from "../services/UsageReport.js"

export const PlanHandlers = HttpApiBuilder.group(Api.Api, "plan", (handlers) =>
  Effect.gen(function*() {
    const entitlements = unavailableAsDefect(yield* Entitlements)
    const usage = unavailableAsDefect(yield* UsageReport)
    return handlers
      .handle("plan", () =>
        Effect.gen(function*() {
          const principal = yield* Security.CurrentPrincipal
          const { entitlements: values, plan } = yield* entitlements.forWorkspace(principal.workspaceId)
          return { workspace_id: principal.workspaceId, plan, entitlements: values }
        }))
      .handle("usage", () =>
        Effect.flatMap(Security.CurrentPrincipal, (principal) => usage.forWorkspace(principal.workspaceId)))
  }))
