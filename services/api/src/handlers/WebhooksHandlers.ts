import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { Webhooks } from "../services/Webhooks.js"

export const WebhooksHandlers = HttpApiBuilder.group(Api.Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = unavailableAsDefect(yield* Webhooks)
    const ws = Effect.map(Security.CurrentPrincipal, (p) => p.workspaceId)
    return handlers
      .handle("eventTypes", ({ urlParams }) => webhooks.eventTypes(urlParams))
      .handle("create", ({ payload }) => Effect.flatMap(ws, (w) => webhooks.create(w, payload)))
      .handle("list", ({ urlParams }) => Effect.flatMap(ws, (w) => webhooks.list(w, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(ws, (w) => webhooks.get(w, path.endpointId)))
      .handle("update", ({ path, payload }) => Effect.flatMap(ws, (w) => webhooks.update(w, path.endpointId, payload)))
      .handle("delete", ({ path }) => Effect.flatMap(ws, (w) => webhooks.remove(w, path.endpointId)))
      .handle("rotateSecret", ({ path }) => Effect.flatMap(ws, (w) => webhooks.rotateSecret(w, path.endpointId)))
      .handle("test", ({ path, payload }) =>
        Effect.flatMap(ws, (w) => webhooks.test(w, path.endpointId, payload?.event_type)))
      .handle("endpointDeliveries", ({ path, urlParams }) =>
        Effect.flatMap(ws, (w) =>
          webhooks.listDeliveries(w, urlParams, path.endpointId)))
      .handle("deliveries", ({ urlParams }) =>
        Effect.flatMap(ws, (w) =>
          webhooks.listDeliveries(w, urlParams)))
      .handle("delivery", ({ path }) => Effect.flatMap(ws, (w) => webhooks.getDelivery(w, path.deliveryId)))
      .handle("replay", ({ path }) => Effect.flatMap(ws, (w) => webhooks.replay(w, path.deliveryId)))
  }))
