import { HttpApiBuilder } from "@effect/platform"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { ContactGroups } from "../services/ContactGroups.js"

export const ContactGroupsHandlers = HttpApiBuilder.group(
  Api.Api,
  "contactGroups",
  (handlers) =>
    Effect.gen(function*() {
      const groups = unavailableAsDefect(yield* ContactGroups)
      return handlers
        .handle(
          "create",
          ({ payload }) => Effect.flatMap(Security.CurrentPrincipal, (p) => groups.create(p.workspaceId, payload))
        )
        .handle(
          "list",
          ({ urlParams }) => Effect.flatMap(Security.CurrentPrincipal, (p) => groups.list(p.workspaceId, urlParams))
        )
        .handle(
          "get",
          ({ path }) => Effect.flatMap(Security.CurrentPrincipal, (p) => groups.get(p.workspaceId, path.groupId))
        )
        .handle(
          "update",
          ({ path, payload }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) => groups.update(p.workspaceId, path.groupId, payload))
        )
        .handle(
          "delete",
          ({ path }) => Effect.flatMap(Security.CurrentPrincipal, (p) => groups.remove(p.workspaceId, path.groupId))
        )
        .handle(
          "addMembers",
          ({ path, payload }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) =>
              groups.addMembers(p.workspaceId, path.groupId, payload.contact_ids))
        )
        .handle(
          "removeMember",
          ({ path }) =>
            Effect.flatMap(Security.CurrentPrincipal, (p) =>
              groups.removeMember(p.workspaceId, path.groupId, path.contactId))
        )
    })
)
