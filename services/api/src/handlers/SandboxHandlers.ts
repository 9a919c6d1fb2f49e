import { HttpApiBuilder } from "@effect/platform"
import { Api, CurrentPrincipal } from "@switchboard/api"
import { Effect } from "effect"
import { Sandbox } from "../services/Sandbox.js"

export const SandboxHandlers = HttpApiBuilder.group(Api, "sandbox", (handlers) =>
  Effect.gen(function*() {
    const sandbox = yield* Sandbox
    return handlers
      .handle("create", () => Effect.flatMap(CurrentPrincipal, (p) => sandbox.create(p)))
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => sandbox.list(p, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => sandbox.get(p, path.sessionId)))
      .handle("verify", ({ path, payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) => sandbox.verify(p, path.sessionId, payload)))
      .handle("revoke", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (p) => sandbox.revoke(p, path.sessionId)))
      .handle("inbound", ({ path, payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          sandbox.inbound(p, path.sessionId, payload)))
  }))
