import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { Conversations } from "../services/Conversations.js"
import { Messages } from "../services/Messages.js"

export const MessagesHandlers = HttpApiBuilder.group(Api.Api, "messages", (handlers) =>
  Effect.gen(function*() {
    const messages = unavailableAsDefect(yield* Messages)
    const conversations = unavailableAsDefect(yield* Conversations)
    return handlers
      .handle("send", ({ headers, payload }) =>
        // a replay sets `Idempotent-Replay: true` itself (services/Idempotency.ts)
        Effect.flatMap(
          Security.CurrentPrincipal,
          (principal) => messages.send(principal, payload, headers["idempotency-key"])
        ))
      .handle(
        "list",
        ({ urlParams }) => Effect.flatMap(Security.CurrentPrincipal, (p) => messages.list(p.workspaceId, urlParams))
      )
      .handle(
        "get",
        ({ path }) => Effect.flatMap(Security.CurrentPrincipal, (p) => messages.get(p.workspaceId, path.messageId))
      )
      .handle(
        "markRead",
        ({ path }) =>
          Effect.flatMap(Security.CurrentPrincipal, (p) => conversations.markMessageRead(p.workspaceId, path.messageId))
      )
  }))
