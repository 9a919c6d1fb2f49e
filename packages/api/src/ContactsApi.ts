/** Contacts, tags and groups (docs/API.md "Contacts"). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Characters, ContactFields, Contacts, Errors, Ids, Pagination, Schemas } from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, rateLimited, requireScopes } from "./Security.js"

// the rules every door shares (an import checks its rows with the same): domain `ContactFields.ts`
const Name = Schema.NullOr(ContactFields.ContactName)
const EmailAddress = Schema.NullOr(ContactFields.ContactEmail)

/** A tag as sent: stored trimmed and lower-case. */
export const TagInput = Schema.String.pipe(
  Schema.filter((s) => {
    const n = Characters.characterCount(s.trim())
    return (n >= 1 && n <= 64) || "Expected a tag of 1 to 64 characters (after trimming)"
  })
).annotations({ description: "1..64 characters; stored trimmed and lower-case" })

export const AttributesInput = ContactFields.ContactAttributes

const contactFields = {
  phone_number: Schemas.E164.annotations({ description: "E.164; unique per workspace (409 CONFLICT otherwise)" }),
  name: Schema.optional(Name),
  email: Schema.optional(EmailAddress),
  attributes: Schema.optional(AttributesInput),
  tags: Schema.optional(Schema.Array(TagInput).pipe(Schema.maxItems(50))),
  group_ids: Schema.optional(
    Schema.Array(Ids.IdRef("grp")).pipe(Schema.maxItems(50)).annotations({
      description: "Groups of the workspace (404 NOT_FOUND with `details.resource = contact_group` otherwise)"
    })
  )
}

export const CreateContactRequest = Schemas.StrictStruct(contactFields).annotations({
  identifier: "CreateContactRequest"
})

export const UpdateContactRequest = Schemas.StrictStruct({
  ...contactFields,
  phone_number: Schema.optional(contactFields.phone_number)
}).pipe(
  Schema.filter((b) => Object.keys(b).length > 0 || "Send at least one field")
).annotations({
  identifier: "UpdateContactRequest",
  description: "Only the fields sent change; `attributes`, `tags` and `group_ids` replace the whole value."
})

export const DeletedContact = Schema.Struct({
  id: Ids.Id("cnt"),
  object: Schema.Literal("contact"),
  deleted: Schema.Literal(true)
}).annotations({ identifier: "DeletedContact" })

const ContactPath = Schema.Struct({ contactId: Ids.IdRef("cnt") })

const DELETE_POLICY =
  "Deletes the contact and its group memberships. Its messages and conversations stay readable and keep their `contact_id`, which no longer resolves (GET is 404); a later message to or from the number creates a new contact with a new id. `contact.deleted` is emitted."

export class ContactsApi extends HttpApiGroup.make("contacts")
  .add(
    HttpApiEndpoint.post("create", "/v1/contacts")
      .setPayload(CreateContactRequest)
      .addSuccess(Contacts.Contact, { status: 201 })
      .addError(Errors.Conflict)
      .addError(Errors.EntitlementLimitReached)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "Creates a contact; `contact.created` is emitted. The number already belongs to a contact: 409 `CONFLICT` with `details.reason = phone_number_taken` and `details.id` (the existing contact). Beyond the plan's `contacts` entitlement (counted like contacts that sends create): 409 `ENTITLEMENT_LIMIT_REACHED`. Tags are stored trimmed and lower-case."
      )
      .pipe(requireScopes("contacts.manage"), rateLimited("contact_create"))
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/contacts")
      .setUrlParams(Schema.Struct({
        ...Pagination.ListParams,
        tag: Schema.optional(TagInput.annotations({ description: "Contacts carrying this tag (normalised)" })),
        group_id: Schema.optional(Ids.IdRef("grp").annotations({ description: "Members of this group" })),
        q: Schema.optional(
          Schema.String.pipe(Characters.minCharacters(1), Characters.maxCharacters(256)).annotations({
            description: "Case-insensitive substring of the name, phone number or e-mail (indexed)"
          })
        )
      }))
      .addSuccess(Pagination.Page(Contacts.Contact))
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "Newest first. Filters combine (AND). An unknown `group_id` is 404 with `details.resource = contact_group`."
      )
      .pipe(requireScopes("contacts.read"))
  )
  .add(
    HttpApiEndpoint.get("tags", "/v1/contact-tags")
      .setUrlParams(Schema.Struct(Pagination.KeyListParams))
      .addSuccess(Pagination.Page(Contacts.ContactTag))
      .annotate(
        OpenApi.Description,
        "The workspace's tags with their number of contacts, in the list envelope, ordered by tag (byte order of the lower-case name): a stable order, so a walk with `after` neither repeats nor skips a tag."
      )
      .pipe(requireScopes("contacts.read"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/contacts/:contactId")
      .setPath(ContactPath)
      .addSuccess(Contacts.Contact)
      .addError(Errors.NotFound)
      .annotate(OpenApi.Description, "404 `NOT_FOUND` with `details.resource = contact` when unknown or deleted.")
      .pipe(requireScopes("contacts.read"))
  )
  .add(
    HttpApiEndpoint.patch("update", "/v1/contacts/:contactId")
      .setPath(ContactPath)
      .setPayload(UpdateContactRequest)
      .addSuccess(Contacts.Contact)
      .addError(Errors.NotFound)
      .addError(Errors.Conflict)
      .annotate(
        OpenApi.Description,
        "Changes the fields sent (at least one); `contact.updated` is emitted. A number used by another contact: 409 `CONFLICT` naming it in `details.id`."
      )
      .pipe(requireScopes("contacts.manage"))
  )
  .add(
    HttpApiEndpoint.del("delete", "/v1/contacts/:contactId")
      .setPath(ContactPath)
      .addSuccess(DeletedContact)
      .addError(Errors.NotFound)
      .annotate(OpenApi.Description, DELETE_POLICY)
      .pipe(requireScopes("contacts.manage"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Contacts")
{}
