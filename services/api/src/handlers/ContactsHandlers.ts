import { HttpApiBuilder } from "@effect/platform"
import { Api, CurrentPrincipal } from "@switchboard/api"
import { Effect } from "effect"
import { ContactGroups } from "../services/ContactGroups.js"
import { ContactImports } from "../services/ContactImports.js"
import { Contacts } from "../services/Contacts.js"

export const ContactsHandlers = HttpApiBuilder.group(Api, "contacts", (handlers) =>
  Effect.gen(function*() {
    const contacts = yield* Contacts
    return handlers
      .handle(
        "create",
        ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => contacts.create(p.workspaceId, payload))
      )
      .handle(
        "list",
        ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => contacts.list(p.workspaceId, urlParams))
      )
      .handle(
        "tags",
        ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => contacts.tags(p.workspaceId, urlParams))
      )
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => contacts.get(p.workspaceId, path.contactId)))
      .handle(
        "update",
        ({ path, payload }) =>
          Effect.flatMap(CurrentPrincipal, (p) => contacts.update(p.workspaceId, path.contactId, payload))
      )
      .handle(
        "delete",
        ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => contacts.remove(p.workspaceId, path.contactId))
      )
  }))

export const ContactGroupsHandlers = HttpApiBuilder.group(Api, "contactGroups", (handlers) =>
  Effect.gen(function*() {
    const groups = yield* ContactGroups
    return handlers
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (p) => groups.create(p.workspaceId, payload)))
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentPrincipal, (p) => groups.list(p.workspaceId, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => groups.get(p.workspaceId, path.groupId)))
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          groups.update(p.workspaceId, path.groupId, payload)))
      .handle("delete", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (p) => groups.remove(p.workspaceId, path.groupId)))
      .handle("addMembers", ({ path, payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          groups.addMembers(p.workspaceId, path.groupId, payload.contact_ids)))
      .handle("removeMember", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          groups.removeMember(p.workspaceId, path.groupId, path.contactId)))
  }))

export const ContactImportsHandlers = HttpApiBuilder.group(Api, "contactImports", (handlers) =>
  Effect.gen(function*() {
    const imports = yield* ContactImports
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) =>
          imports.create(p.workspaceId, payload, headers["idempotency-key"])))
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentPrincipal, (p) => imports.list(p.workspaceId, urlParams)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (p) => imports.get(p.workspaceId, path.importId)))
  }))
