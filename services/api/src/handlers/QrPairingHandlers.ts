import { HttpApiBuilder } from "@effect/platform"
import { Api, CurrentPrincipal } from "@switchboard/api"
import { Effect } from "effect"
import { QrPairing } from "../services/QrPairing.js"
import * as Sse from "../Sse.js"

export const QrPairingHandlers = HttpApiBuilder.group(Api, "qrPairing", (handlers) =>
  Effect.gen(function*() {
    const pairing = yield* QrPairing
    return handlers
      .handle("start", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (p) => pairing.start(p.workspaceId, path.channelId)))
      .handle(
        "safety",
        ({ path }) =>
          Effect.flatMap(CurrentPrincipal, (p) => pairing.safety(p.workspaceId, path.channelId))
      )
      .handle(
        "status",
        ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => pairing.status(p.workspaceId, path.channelId))
      )
      .handle(
        "logout",
        ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => pairing.logout(p.workspaceId, path.channelId))
      )
      .handle("stream", ({ path }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const frames = yield* pairing.frames(principal.workspaceId, path.channelId)
          return yield* Sse.response(frames, { heartbeat: "15 seconds", maxDuration: "5 minutes" })
        }))
  }))
