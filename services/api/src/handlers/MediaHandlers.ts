import { HttpApiBuilder } from "@effect/platform"
import { Api, CurrentPrincipal } from "@switchboard/api"
import { Effect } from "effect"
import { MediaFiles } from "../services/MediaFiles.js"

export const MediaHandlers = HttpApiBuilder.group(Api, "media", (handlers) =>
  Effect.gen(function*() {
    const media = yield* MediaFiles
    return handlers
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => media.get(p.workspaceId, path.mediaId)))
      .handle("content", ({ headers, path }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          media.content(p.workspaceId, path.mediaId, headers)))
  }))
