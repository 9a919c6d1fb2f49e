import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { ApiKeys } from "../services/ApiKeys.js"

export const ApiKeysHandlers = HttpApiBuilder.group(Api.Api, "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const apiKeys = unavailableAsDefect(yield* ApiKeys)
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(Security.CurrentPrincipal, (principal) =>
          apiKeys.list(principal.workspaceId, urlParams)))
      .handle("create", ({ payload }) =>
        Effect.flatMap(Security.CurrentPrincipal, (principal) =>
          apiKeys.create({ ...payload, workspaceId: principal.workspaceId, createdBy: principal.userId })))
      .handle("revoke", ({ path }) =>
        Effect.flatMap(Security.CurrentPrincipal, (principal) =>
          apiKeys.revoke(principal, path.keyId)))
  }))
