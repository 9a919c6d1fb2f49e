import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { QrPairing } from "../services/QrPairing.js"
import * as Sse from "../Sse.js"

export const QrPairingHandlers = HttpApiBuilder.group(Api.Api, "qrPairing", (handlers) =>
  Effect.gen(function*() {
    const pairing = unavailableAsDefect(yield* QrPairing)
    return handlers
      .handle("start", ({ path, payload }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) =>
          pairing.start(p.workspaceId, path.channelId, payload)))
      .handle(
        "safety",
        ({ path }) =>
          Effect.flatMap(Security.CurrentPrincipal, (p) => pairing.safety(p.workspaceId, path.channelId))
      )
      .handle(
        "status",
        ({ path }) => Effect.flatMap(Security.CurrentPrincipal, (p) => pairing.status(p.workspaceId, path.channelId))
      )
      .handle(
        "logout",
        ({ path }) => Effect.flatMap(Security.CurrentPrincipal, (p) => pairing.logout(p.workspaceId, path.channelId))
      )
      .handle("stream", ({ path }) =>
        Effect.gen(function*() {
          const principal = yield* Security.CurrentPrincipal
          const frames = yield* pairing.frames(principal.workspaceId, path.channelId)
          return yield* Sse.response(frames, { heartbeat: "15 seconds", maxDuration: "5 minutes" })
        }))
  }))
