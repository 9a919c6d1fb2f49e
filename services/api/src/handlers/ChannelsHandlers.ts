import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { Channels } from "../services/Channels.js"

export const ChannelsHandlers = HttpApiBuilder.group(Api.Api, "channels", (handlers) =>
  Effect.gen(function*() {
    const channels = unavailableAsDefect(yield* Channels)
    return handlers
      .handle(
        "list",
        ({ urlParams }) => Effect.flatMap(Security.CurrentPrincipal, (p) => channels.list(p.workspaceId, urlParams))
      )
      .handle(
        "create",
        ({ payload }) => Effect.flatMap(Security.CurrentPrincipal, (p) => channels.create(p.workspaceId, payload))
      )
      .handle(
        "get",
        ({ path }) =>
          Effect.flatMap(Security.CurrentPrincipal, (p) =>
            Effect.map(channels.get(p.workspaceId, path.channelId), (c) => c.channel))
      )
      .handle(
        "update",
        ({ path, payload }) =>
          Effect.flatMap(Security.CurrentPrincipal, (p) =>
            channels.update(p.workspaceId, path.channelId, payload))
      )
      .handle(
        "archive",
        ({ path }) => Effect.flatMap(Security.CurrentPrincipal, (p) => channels.archive(p.workspaceId, path.channelId))
      )
      .handle(
        "capabilities",
        ({ path }) =>
          Effect.flatMap(Security.CurrentPrincipal, (p) => channels.capabilities(p.workspaceId, path.channelId))
      )
  }))
