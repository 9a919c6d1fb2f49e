import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { Conversations } from "../services/Conversations.js"

export const ConversationsHandlers = HttpApiBuilder.group(
  Api.Api,
  "conversations",
  (handlers) =>
    Effect.gen(function*() {
      const conversations = unavailableAsDefect(yield* Conversations)
      return handlers
        .handle(
          "list",
          ({ urlParams }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) => conversations.list(p.workspaceId, urlParams))
        )
        .handle(
          "get",
          ({ path }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) => conversations.get(p.workspaceId, path.conversationId))
        )
        .handle(
          "update",
          ({ path, payload }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) =>
              conversations.update(p.workspaceId, path.conversationId, payload))
        )
        .handle(
          "markRead",
          ({ path }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) =>
              conversations.markRead(p.workspaceId, path.conversationId))
        )
        .handle(
          "messages",
          ({ path, urlParams }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) =>
              conversations.thread(p.workspaceId, path.conversationId, urlParams))
        )
        .handle("reply", ({ headers, path, payload }) =>
          // a replay sets `Idempotent-Replay: true` itself (services/Idempotency.ts)
          Effect.flatMap(
            Security.CurrentPrincipal,
            (p) =>
              conversations.reply(p, path.conversationId, payload, headers["idempotency-key"])
          ))
        .handle(
          "addNote",
          ({ path, payload }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) =>
              conversations.addNote(p, path.conversationId, payload))
        )
        .handle(
          "notes",
          ({ path, urlParams }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) =>
              conversations.listNotes(p.workspaceId, path.conversationId, urlParams))
        )
    })
)
