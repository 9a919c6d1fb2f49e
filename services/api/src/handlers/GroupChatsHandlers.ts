import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { GroupChats } from "../services/GroupChats.js"

export const GroupChatsHandlers = HttpApiBuilder.group(
  Api.Api,
  "groupChats",
  (handlers) =>
    Effect.gen(function*() {
      const groupChats = unavailableAsDefect(yield* GroupChats)
      return handlers
        .handle(
          "list",
          ({ path, urlParams }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) => groupChats.list(p.workspaceId, path.channelId, urlParams))
        )
        .handle(
          "get",
          ({ path }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) => groupChats.get(p.workspaceId, path.groupChatId))
        )
    })
)
