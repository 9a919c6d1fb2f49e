/** Contact group use-cases (docs/API.md "Contacts"): CRUD and bulk, idempotent membership. */
import { ContactGroupsRepo, ContactsRepo, Transactions } from "@switchboard/db"
import { type Contacts, Errors, Ids, Pagination, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"
import { groupNotFound } from "./Contacts.js"

const nameTaken = () =>
  new Errors.Conflict({
    message: "A contact group with that name already exists in this workspace",
    details: { reason: "name_taken", field: "name" }
  })

export class ContactGroups extends Effect.Service<ContactGroups>()("@switchboard/service-api/ContactGroups", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const repo = yield* ContactGroupsRepo.ContactGroupsRepo
    const contacts = yield* ContactsRepo.ContactsRepo
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

    const get = Effect.fn("ContactGroups.get")(function*(workspaceId: string, id: Contacts.ContactGroup["id"]) {
      const found = yield* repo.find(workspaceId, id)
      if (Option.isNone(found)) return yield* groupNotFound(id)
      return found.value
    })

    const create = Effect.fn("ContactGroups.create")(function*(
      workspaceId: string,
      input: { readonly name: string; readonly description?: string | null | undefined }
    ) {
      const id = yield* Ids.newId("grp")
      yield* repo.insert({ id, workspaceId, name: input.name, description: input.description ?? null, now: yield* now })
        .pipe(Effect.catchTag("UniqueViolation", () => Effect.fail(nameTaken())))
      // just inserted: not finding it is a defect
      return yield* Effect.orDie(get(workspaceId, id))
    })

    const list = Effect.fn("ContactGroups.list")(function*(
      workspaceId: string,
      query: { readonly limit?: number | undefined; readonly after?: Pagination.CursorPosition | undefined }
    ) {
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      return Pagination.toPage(yield* repo.list(workspaceId, limit, query.after), limit, (g) => g)
    })

    const update = Effect.fn("ContactGroups.update")(function*(
      workspaceId: string,
      id: Contacts.ContactGroup["id"],
      changes: { readonly name?: string | undefined; readonly description?: string | null | undefined }
    ) {
      const updated = yield* repo.update(workspaceId, id, changes, yield* now).pipe(
        Effect.catchTag("UniqueViolation", () => Effect.fail(nameTaken()))
      )
      if (!updated) return yield* groupNotFound(id)
      return yield* get(workspaceId, id)
    })

    const remove = Effect.fn("ContactGroups.remove")(function*(workspaceId: string, id: Contacts.ContactGroup["id"]) {
      if (!(yield* repo.remove(workspaceId, id))) return yield* groupNotFound(id)
      return { id, object: "contact_group" as const, deleted: true as const }
    })

    /** All or nothing: an id that is not a contact of the workspace adds none. */
    const addMembers = Effect.fn("ContactGroups.addMembers")(
      function*(
        workspaceId: string,
        id: Contacts.ContactGroup["id"],
        contactIds: ReadonlyArray<Contacts.Contact["id"]>
      ) {
        return yield* transactions.run(Effect.gen(function*() {
          yield* get(workspaceId, id)
          const known = yield* contacts.existingIds(workspaceId, contactIds)
          const issues = contactIds.flatMap((c, i) =>
            known.has(c) ? [] : [{ path: ["contact_ids", i], message: "No such contact in this workspace" }]
          )
          if (issues.length > 0) {
            return yield* new Errors.NotFound({
              message: "Some contacts do not exist in this workspace",
              details: { resource: "contact", issues }
            })
          }
          yield* repo.addMembers(id, [...new Set(contactIds)], yield* now)
          return yield* get(workspaceId, id)
        }))
      }
    )

    const removeMember = Effect.fn("ContactGroups.removeMember")(
      function*(workspaceId: string, id: Contacts.ContactGroup["id"], contactId: Contacts.Contact["id"]) {
        yield* get(workspaceId, id)
        yield* repo.removeMember(id, contactId)
        return yield* get(workspaceId, id)
      }
    )

    return { create, get, list, update, remove, addMembers, removeMember } as const
  }),
  dependencies: [
    Transactions.Transactions.Default,
    ContactGroupsRepo.ContactGroupsRepo.Default,
    ContactsRepo.ContactsRepo.Default
  ]
}) {}
