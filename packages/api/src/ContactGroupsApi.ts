/** Contact groups and their members (docs/API.md "Contacts"). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Characters, Contacts, Errors, Ids, Pagination, Schemas } from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, requireScopes } from "./Security.js"

export const CreateContactGroupRequest = Schemas.StrictStruct({
  name: Schema.String.pipe(Characters.minCharacters(1), Characters.maxCharacters(64)).annotations({
    description: "1..64 characters, unique per workspace case-insensitively (409 CONFLICT)"
  }),
  description: Schema.optional(Schema.NullOr(Schema.String.pipe(Characters.maxCharacters(512))))
}).annotations({ identifier: "CreateContactGroupRequest" })

export const UpdateContactGroupRequest = Schemas.StrictStruct({
  name: Schema.optional(CreateContactGroupRequest.fields.name),
  description: CreateContactGroupRequest.fields.description
}).pipe(
  Schema.filter((b) => Object.keys(b).length > 0 || "Send at least one of name and description")
).annotations({ identifier: "UpdateContactGroupRequest" })

export const AddMembersRequest = Schemas.StrictStruct({
  contact_ids: Schema.Array(Ids.IdRef("cnt")).pipe(Schema.minItems(1), Schema.maxItems(1000)).annotations({
    description: "1..1000 contacts of the workspace; ones already members are left as they are"
  })
}).annotations({ identifier: "AddMembersRequest" })

export const DeletedContactGroup = Schema.Struct({
  id: Ids.Id("grp"),
  object: Schema.Literal("contact_group"),
  deleted: Schema.Literal(true)
}).annotations({ identifier: "DeletedContactGroup" })

const GroupPath = Schema.Struct({ groupId: Ids.IdRef("grp") })

export class ContactGroupsApi extends HttpApiGroup.make("contactGroups")
  .add(
    HttpApiEndpoint.post("create", "/v1/contact-groups")
      .setPayload(CreateContactGroupRequest)
      .addSuccess(Contacts.ContactGroup, { status: 201 })
      .addError(Errors.Conflict)
      .annotate(
        OpenApi.Description,
        "Name taken (case-insensitively): 409 `CONFLICT` with `details.reason = name_taken`."
      )
      .pipe(requireScopes("contacts.manage"))
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/contact-groups")
      .setUrlParams(Schema.Struct(Pagination.ListParams))
      .addSuccess(Pagination.Page(Contacts.ContactGroup))
      .annotate(OpenApi.Description, "Newest first, with each group's `member_count`.")
      .pipe(requireScopes("contacts.read"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/contact-groups/:groupId")
      .setPath(GroupPath)
      .addSuccess(Contacts.ContactGroup)
      .addError(Errors.NotFound)
      .pipe(requireScopes("contacts.read"))
  )
  .add(
    HttpApiEndpoint.patch("update", "/v1/contact-groups/:groupId")
      .setPath(GroupPath)
      .setPayload(UpdateContactGroupRequest)
      .addSuccess(Contacts.ContactGroup)
      .addError(Errors.NotFound)
      .addError(Errors.Conflict)
      .pipe(requireScopes("contacts.manage"))
  )
  .add(
    HttpApiEndpoint.del("delete", "/v1/contact-groups/:groupId")
      .setPath(GroupPath)
      .addSuccess(DeletedContactGroup)
      .addError(Errors.NotFound)
      .annotate(OpenApi.Description, "Deletes the group and its memberships; the contacts stay.")
      .pipe(requireScopes("contacts.manage"))
  )
  .add(
    HttpApiEndpoint.post("addMembers", "/v1/contact-groups/:groupId/members")
      .setPath(GroupPath)
      .setPayload(AddMembersRequest)
      .addSuccess(Contacts.ContactGroup)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "Adds contacts in bulk; repeating a call changes nothing (idempotent). Any id that is not a contact of the workspace: 404 `NOT_FOUND` with `details.resource = contact` and `details.issues[].path` naming its position, and nothing is added."
      )
      .pipe(requireScopes("contacts.manage"))
  )
  .add(
    HttpApiEndpoint.del("removeMember", "/v1/contact-groups/:groupId/members/:contactId")
      .setPath(Schema.Struct({ groupId: Ids.IdRef("grp"), contactId: Ids.IdRef("cnt") }))
      .addSuccess(Contacts.ContactGroup)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "Removes one contact from the group; repeatable (a contact that is not a member changes nothing). Unknown group: 404."
      )
      .pipe(requireScopes("contacts.manage"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Contact groups")
{}
