import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { HttpConfig } from "../HttpConfig.js"
import { expireRefreshCookie } from "../RefreshCookie.js"
import { Accounts } from "../services/Accounts.js"

export const SessionHandlers = HttpApiBuilder.group(Api.Api, "session", (handlers) =>
  Effect.gen(function*() {
    const accounts = unavailableAsDefect(yield* Accounts)
    const { basePath } = yield* HttpConfig
    return handlers
      .handle("logout", () =>
        Effect.gen(function*() {
          const principal = yield* Security.CurrentPrincipal
          yield* accounts.logout(principal.sessionId!)
          yield* expireRefreshCookie(basePath)
        }))
      .handle("me", () => Effect.flatMap(Security.CurrentPrincipal, (principal) => accounts.me(principal.userId!)))
      .handle("members", ({ urlParams }) =>
        Effect.flatMap(Security.CurrentPrincipal, (principal) =>
          accounts.members(principal.workspaceId, urlParams)))
  }))
