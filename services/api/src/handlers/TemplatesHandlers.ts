import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { Templates } from "../services/Templates.js"

export const TemplatesHandlers = HttpApiBuilder.group(Api.Api, "templates", (handlers) =>
  Effect.gen(function*() {
    const templates = unavailableAsDefect(yield* Templates)
    const ws = Effect.map(Security.CurrentPrincipal, (p) => p.workspaceId)
    return handlers
      .handle("create", ({ payload }) => Effect.flatMap(ws, (w) => templates.create(w, payload)))
      .handle("list", ({ urlParams }) => Effect.flatMap(ws, (w) => templates.list(w, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(ws, (w) => templates.get(w, path.templateId)))
      .handle("update", ({ path, payload }) => Effect.flatMap(ws, (w) => templates.update(w, path.templateId, payload)))
      .handle("archive", ({ path }) => Effect.flatMap(ws, (w) => templates.archive(w, path.templateId)))
      .handle("testSend", ({ headers, path, payload }) =>
        // a replay sets `Idempotent-Replay: true` itself (services/Idempotency.ts)
        Effect.flatMap(
          Security.CurrentPrincipal,
          (p) => templates.testSend(p, path.templateId, payload, headers["idempotency-key"])
        ))
  }))
