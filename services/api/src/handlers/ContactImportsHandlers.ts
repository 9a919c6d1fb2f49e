import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { ContactImports } from "../services/ContactImports.js"

export const ContactImportsHandlers = HttpApiBuilder.group(
  Api.Api,
  "contactImports",
  (handlers) =>
    Effect.gen(function*() {
      const imports = unavailableAsDefect(yield* ContactImports)
      return handlers
        .handle(
          "create",
          ({ headers, payload }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) =>
              imports.create(p.workspaceId, payload, headers["idempotency-key"]))
        )
        .handle(
          "list",
          ({ urlParams }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) => imports.list(p.workspaceId, urlParams))
        )
        .handle(
          "get",
          ({ path }) => Effect.flatMap(Security.CurrentPrincipal, (p) => imports.get(p.workspaceId, path.importId))
        )
    })
)
