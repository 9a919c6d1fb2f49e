import { HttpApiBuilder } from "@effect/platform"
import { Api, CurrentPrincipal } from "@switchboard/api"
import { Effect } from "effect"
import { ApiKeys } from "../services/ApiKeys.js"

export const ApiKeysHandlers = HttpApiBuilder.group(Api, "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentPrincipal, (principal) => apiKeys.list(principal.workspaceId, urlParams)))
      .handle("create", ({ payload }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          apiKeys.create({ ...payload, workspaceId: principal.workspaceId, createdBy: principal.userId })))
      .handle("revoke", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          apiKeys.revoke(principal, path.keyId)))
  }))
