/** Contact use-cases (docs/API.md "Contacts"): CRUD, filters and tags. */
import {
  ContactGroupsRepo,
  ContactsLimitLock,
  ContactsRepo,
  EventsRepo,
  GroupChatsRepo,
  Transactions
} from "@switchboard/db"
import { Contacts as DomainContacts, Errors, Events, Ids, Pagination, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"
import { enforcedLimit, Entitlements, refuseBeyond } from "./Entitlements.js"

export interface ContactInput {
  readonly phone_number?: string | undefined
  readonly name?: string | null | undefined
  readonly email?: string | null | undefined
  readonly attributes?: Readonly<Record<string, string>> | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly group_ids?: ReadonlyArray<string> | undefined
}

export const contactNotFound = (id: string) =>
  new Errors.NotFound({ message: `No contact ${id} in this workspace`, details: { resource: "contact", id } })

export const groupNotFound = (id: string) =>
  new Errors.NotFound({
    message: `No contact group ${id} in this workspace`,
    details: { resource: "contact_group", id }
  })

const phoneTaken = (existing: Option.Option<string>) =>
  new Errors.Conflict({
    message: "Another contact of this workspace has this phone number",
    details: {
      reason: "phone_number_taken",
      field: "phone_number",
      ...Option.match(existing, { onNone: () => ({}), onSome: (id) => ({ id }) })
    }
  })

export class Contacts extends Effect.Service<Contacts>()("@switchboard/service-api/Contacts", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const repo = yield* ContactsRepo.ContactsRepo
    const limitLock = yield* ContactsLimitLock.ContactsLimitLock
    const groups = yield* ContactGroupsRepo.ContactGroupsRepo
    const groupChats = yield* GroupChatsRepo.GroupChatsRepo
    const events = yield* EventsRepo.EventsRepo
    const entitlements = yield* Entitlements
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

    /** Every id must be a group of the workspace; the first unknown one is a 404. */
    const requireGroups = Effect.fn("Contacts.requireGroups")(
      function*(workspaceId: string, ids: ReadonlyArray<string>) {
        const known = yield* groups.existingIds(workspaceId, ids)
        const missing = ids.find((id) => !known.has(id))
        if (missing !== undefined) return yield* groupNotFound(missing)
      }
    )

    const event = (type: "contact.created" | "contact.updated" | "contact.deleted", workspaceId: string, id: string) =>
      Effect.flatMap(now, (at) =>
        events.append({
          workspaceId,
          event: Events.DomainEvent.make(type, { object: "contact", object_id: id as never, contact_id: id as never }),
          occurredAt: at
        }))

    const get = Effect.fn("Contacts.get")(function*(workspaceId: string, id: DomainContacts.Contact["id"]) {
      const found = yield* repo.find(workspaceId, id)
      if (Option.isNone(found)) return yield* contactNotFound(id)
      return found.value
    })

    const create = Effect.fn("Contacts.create")(
      function*(workspaceId: string, input: ContactInput & { readonly phone_number: string }) {
        const groupIds = [...new Set(input.group_ids ?? [])]
        return yield* transactions.run(Effect.gen(function*() {
          yield* requireGroups(workspaceId, groupIds)
          const allowance = yield* entitlements.get(workspaceId, "contacts")
          const limited = enforcedLimit("contacts", allowance) !== undefined
          // under a limit, the workspace's contacts lock before the insert (held to commit): the
          // count below then includes every contact a concurrent send or create committed
          if (limited) yield* limitLock.lock(workspaceId)
          const id = yield* Ids.newId("cnt")
          const at = yield* now
          const inserted = yield* repo.insert({
            id,
            workspaceId,
            phoneNumber: input.phone_number,
            name: input.name ?? null,
            email: input.email ?? null,
            attributes: input.attributes ?? {},
            tags: DomainContacts.normalizeTags(input.tags ?? []),
            now: at
          })
          // one statement decided: a concurrent create of the same number sees the winner here
          if (!inserted) return yield* phoneTaken(yield* repo.findIdByPhone(workspaceId, input.phone_number))
          // counted like a send's new contact: it is already inserted, the others are count - 1
          if (limited) yield* refuseBeyond("contacts", allowance, (yield* repo.countForWorkspace(workspaceId)) - 1)
          if (groupIds.length > 0) yield* groups.setGroupsOf(id, groupIds, at)
          yield* event("contact.created", workspaceId, id)
          return yield* get(workspaceId, id)
        }))
      }
    )

    const update = Effect.fn("Contacts.update")(
      function*(workspaceId: string, id: DomainContacts.Contact["id"], input: ContactInput) {
        return yield* transactions.run(Effect.gen(function*() {
          const groupIds = input.group_ids === undefined ? undefined : [...new Set(input.group_ids)]
          if (groupIds) yield* requireGroups(workspaceId, groupIds)
          const at = yield* now
          const changes: Partial<ContactsRepo.ContactFields> = {
            ...(input.phone_number === undefined ? {} : { phoneNumber: input.phone_number }),
            ...(input.name === undefined ? {} : { name: input.name }),
            ...(input.email === undefined ? {} : { email: input.email }),
            ...(input.attributes === undefined ? {} : { attributes: input.attributes }),
            ...(input.tags === undefined ? {} : { tags: DomainContacts.normalizeTags(input.tags) })
          }
          if (input.phone_number !== undefined) {
            const owner = yield* repo.findIdByPhone(workspaceId, input.phone_number)
            if (Option.isSome(owner) && owner.value !== id) return yield* phoneTaken(owner)
          }
          // a concurrent write took the number in between: the transaction is aborted, no lookup
          const updated = yield* repo.update(workspaceId, id, changes, at).pipe(
            Effect.catchTag("UniqueViolation", () => Effect.fail(phoneTaken(Option.none())))
          )
          if (!updated) return yield* contactNotFound(id)
          if (groupIds) yield* groups.setGroupsOf(id, groupIds, at)
          yield* event("contact.updated", workspaceId, id)
          return yield* get(workspaceId, id)
        }))
      }
    )

    const remove = Effect.fn("Contacts.remove")(function*(workspaceId: string, id: DomainContacts.Contact["id"]) {
      return yield* transactions.run(Effect.gen(function*() {
        // its seats in group chats stay, without it (docs/API.md "Group chats")
        yield* groupChats.releaseContact(workspaceId, id)
        if (!(yield* repo.remove(workspaceId, id))) return yield* contactNotFound(id)
        yield* event("contact.deleted", workspaceId, id)
        return { id, object: "contact" as const, deleted: true as const }
      }))
    })

    const list = Effect.fn("Contacts.list")(function*(
      workspaceId: string,
      query: {
        readonly limit?: number | undefined
        readonly after?: Pagination.CursorPosition | undefined
        readonly tag?: string | undefined
        readonly group_id?: string | undefined
        readonly q?: string | undefined
      }
    ) {
      if (query.group_id !== undefined) yield* requireGroups(workspaceId, [query.group_id])
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      const rows = yield* repo.list(
        workspaceId,
        {
          tag: query.tag === undefined ? undefined : DomainContacts.normalizeTag(query.tag),
          groupId: query.group_id,
          q: query.q
        },
        limit,
        query.after
      )
      return Pagination.toPage(rows, limit, (c) => c)
    })

    const tags = Effect.fn("Contacts.tags")(
      function*(
        workspaceId: string,
        query: { readonly limit?: number | undefined; readonly after?: string | undefined }
      ) {
        const limit = query.limit ?? Pagination.DEFAULT_LIMIT
        const rows = yield* repo.tags(workspaceId, limit, query.after)
        return Pagination.toKeyPage(rows, limit, (t) => t.tag)
      }
    )

    return { create, get, update, remove, list, tags } as const
  }),
  dependencies: [
    Transactions.Transactions.Default,
    ContactsRepo.ContactsRepo.Default,
    ContactsLimitLock.ContactsLimitLock.Default,
    ContactGroupsRepo.ContactGroupsRepo.Default,
    GroupChatsRepo.GroupChatsRepo.Default,
    EventsRepo.EventsRepo.Default,
    Entitlements.Default
  ]
}) {}
