/** Contact imports (docs/API.md "Contact imports"). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Characters, Contacts, Errors, Ids, Pagination, Schemas } from "@switchboard/domain"
import { Schema } from "effect"
import { TagInput } from "./ContactsApi.js"
import * as IdempotencyKey from "./IdempotencyKey.js"
import { Authentication, rateLimited, requireScopes } from "./Security.js"

export const CreateContactImportRequest = Schemas.StrictStruct({
  file: Schema.String.pipe(
    Characters.minCharacters(1),
    Schema.pattern(/^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$/, { message: () => "Expected base64" })
  ).annotations({
    description:
      "The CSV file, base64. A header row names the columns: `phone_number` (required; E.164, or national with `default_country`), `name`, `email`; any other column becomes an attribute. UTF-8, a BOM is ignored, quoted fields may span lines. At most 5 MiB decoded (413 `PAYLOAD_TOO_LARGE`) and 50 000 data rows (422, `details.reason = too_many_rows`)."
  }),
  on_conflict: Schema.optional(Schema.Literal("skip", "update")).annotations({
    description:
      "A number that already is a contact: `skip` (default) leaves it; `update` fills in name and e-mail, merges attributes and adds the tags"
  }),
  default_country: Schema.optional(
    Schema.String.pipe(Schema.pattern(/^[A-Z]{2}$/, { message: () => "Expected an ISO 3166-1 alpha-2 country code" }))
  ).annotations({ description: "Country for numbers without `+` (e.g. `DE` turns `0151 1234567` into +491511234567)" }),
  tags: Schema.optional(Schema.Array(TagInput).pipe(Schema.maxItems(50))).annotations({
    description: "Added to every imported (created or updated) contact"
  }),
  group_id: Schema.optional(Ids.IdRef("grp")).annotations({ description: "Every imported contact joins this group" })
}).annotations({ identifier: "CreateContactImportRequest" })

const DESCRIPTION =
  "Queues an import (202, status `queued`): the file and the job are stored before the answer, and a runner works through the rows in batches of 1000, committing progress with each batch (a runner that dies mid-import is replaced and resumes where it stopped; no row is imported twice). Rows: a number repeated inside the file counts once, later repeats are `skipped` with code `duplicate_in_file`; a row without a possible phone number, unreadable as CSV, or that the API would refuse as a contact (`invalid_name` over 256 characters, `invalid_email`, `too_many_attributes` over 50, `invalid_attribute`: a column name over 64 or a value over 1 024 characters), or holding bytes that are not UTF-8 or U+0000 (`invalid_text`), `failed` with its row, line, column and a reason (never a cell's value); rows that would add contacts beyond the plan's `contacts` entitlement fail with `ENTITLEMENT_LIMIT_REACHED`, the rest import. One `contact.import_completed` event carries the counts (no `contact.created` per row, so receivers are not flooded). The body limit on this route is 7 MiB (a 5 MiB file in base64). `Idempotency-Key` as on POST /v1/messages. A file without a `phone_number` column or header: 422 with `details.reason` `missing_phone_number_column` or `no_header`. Unknown `group_id`: 404."

export class ContactImportsApi extends HttpApiGroup.make("contactImports")
  .add(
    HttpApiEndpoint.post("create", "/v1/contacts/imports")
      .setPayload(CreateContactImportRequest)
      .setHeaders(Schema.Struct({
        "idempotency-key": IdempotencyKey.header
      }))
      .addSuccess(Contacts.ContactImport, { status: 202 })
      .addError(Errors.NotFound)
      .addError(Errors.IdempotencyConflict)
      .annotate(OpenApi.Description, DESCRIPTION)
      .pipe(requireScopes("contacts.manage"), rateLimited("contact_import"))
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/contacts/imports")
      .setUrlParams(Schema.Struct(Pagination.ListParams))
      .addSuccess(Pagination.Page(Contacts.ContactImport))
      .annotate(OpenApi.Description, "The workspace's imports, newest first.")
      .pipe(requireScopes("contacts.read"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/contacts/imports/:importId")
      .setPath(Schema.Struct({ importId: Ids.IdRef("imp") }))
      .addSuccess(Contacts.ContactImport)
      .addError(Errors.NotFound)
      .annotate(
        OpenApi.Description,
        "Status and counts; `processed_rows` grows while `running`. `errors` holds the first 100 failed or repeated rows."
      )
      .pipe(requireScopes("contacts.read"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Contact imports")
{}
