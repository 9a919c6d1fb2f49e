import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { Sandbox } from "../services/Sandbox.js"
import { SandboxGroupChats } from "../services/SandboxGroupChats.js"

export const SandboxHandlers = HttpApiBuilder.group(Api.Api, "sandbox", (handlers) =>
  Effect.gen(function*() {
    const sandbox = unavailableAsDefect(yield* Sandbox)
    const groupChats = unavailableAsDefect(yield* SandboxGroupChats)
    return handlers
      .handle("create", () => Effect.flatMap(Security.CurrentPrincipal, (p) => sandbox.create(p)))
      .handle("list", ({ urlParams }) => Effect.flatMap(Security.CurrentPrincipal, (p) => sandbox.list(p, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(Security.CurrentPrincipal, (p) => sandbox.get(p, path.sessionId)))
      .handle("verify", ({ path, payload }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) =>
          sandbox.verify(p, path.sessionId, payload)))
      .handle("revoke", ({ path }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) => sandbox.revoke(p, path.sessionId)))
      .handle("inbound", ({ path, payload }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) =>
          sandbox.inbound(p, path.sessionId, payload)))
      .handle("createGroupChat", ({ path, payload }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) =>
          groupChats.createGroupChat(p, path.sessionId, payload)))
      .handle("removeFromGroupChat", ({ path }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) =>
          groupChats.removeFromGroupChat(p, path.sessionId, path.groupChatId)))
  }))
