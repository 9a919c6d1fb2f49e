import { HttpApiBuilder } from "@effect/platform"
import { Api, CurrentPrincipal } from "@switchboard/api"
import { Effect } from "effect"
import { Channels } from "../services/Channels.js"
import { Conversations } from "../services/Conversations.js"
import { Messages } from "../services/Messages.js"
import { Sandbox } from "../services/Sandbox.js"

export const MessagesHandlers = HttpApiBuilder.group(Api, "messages", (handlers) =>
  Effect.gen(function*() {
    const messages = yield* Messages
    const conversations = yield* Conversations
    return handlers
      .handle("send", ({ headers, payload }) =>
        // a replay sets `Idempotent-Replay: true` itself (services/Idempotency.ts)
        Effect.flatMap(CurrentPrincipal, (principal) => messages.send(principal, payload, headers["idempotency-key"])))
      .handle(
        "list",
        ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => messages.list(p.workspaceId, urlParams))
      )
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => messages.get(p.workspaceId, path.messageId)))
      .handle("markRead", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          conversations.markMessageRead(p.workspaceId, path.messageId)))
  }))

export const ChannelsHandlers = HttpApiBuilder.group(Api, "channels", (handlers) =>
  Effect.gen(function*() {
    const channels = yield* Channels
    return handlers
      .handle(
        "list",
        ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => channels.list(p.workspaceId, urlParams))
      )
      .handle(
        "create",
        ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => channels.create(p.workspaceId, payload))
      )
      .handle(
        "get",
        ({ path }) =>
          Effect.flatMap(CurrentPrincipal, (p) =>
            Effect.map(channels.get(p.workspaceId, path.channelId), (c) => c.channel))
      )
      .handle(
        "update",
        ({ path, payload }) =>
          Effect.flatMap(CurrentPrincipal, (p) =>
            channels.update(p.workspaceId, path.channelId, payload))
      )
      .handle(
        "archive",
        ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => channels.archive(p.workspaceId, path.channelId))
      )
      .handle(
        "capabilities",
        ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => channels.capabilities(p.workspaceId, path.channelId))
      )
  }))

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
