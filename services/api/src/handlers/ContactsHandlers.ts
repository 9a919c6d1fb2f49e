import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { Contacts } from "../services/Contacts.js"

export const ContactsHandlers = HttpApiBuilder.group(Api.Api, "contacts", (handlers) =>
  Effect.gen(function*() {
    const contacts = unavailableAsDefect(yield* Contacts)
    return handlers
      .handle(
        "create",
        ({ payload }) => Effect.flatMap(Security.CurrentPrincipal, (p) => contacts.create(p.workspaceId, payload))
      )
      .handle(
        "list",
        ({ urlParams }) => Effect.flatMap(Security.CurrentPrincipal, (p) => contacts.list(p.workspaceId, urlParams))
      )
      .handle(
        "tags",
        ({ urlParams }) => Effect.flatMap(Security.CurrentPrincipal, (p) => contacts.tags(p.workspaceId, urlParams))
      )
      .handle("get", ({ path }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) => contacts.get(p.workspaceId, path.contactId)))
      .handle(
        "update",
        ({ path, payload }) =>
          Effect.flatMap(Security.CurrentPrincipal, (p) =>
            contacts.update(p.workspaceId, path.contactId, payload))
      )
      .handle(
        "delete",
        ({ path }) => Effect.flatMap(Security.CurrentPrincipal, (p) => contacts.remove(p.workspaceId, path.contactId))
      )
  }))
