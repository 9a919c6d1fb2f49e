/**
 * Contact imports, the API side (docs/API.md "Contact imports"): checks the file, stores it with its
 * job row before the 202; the runner's import worker does the rest.
 */
import { ContactGroupsRepo, ContactImportsRepo, Transactions } from "@switchboard/db"
import { ContactCsv, ContactFields, Contacts, Errors, Ids, Pagination, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option } from "effect"
import { groupNotFound } from "./Contacts.js"
import { Idempotency } from "./Idempotency.js"

export interface ImportInput {
  readonly file: string
  readonly on_conflict?: "skip" | "update" | undefined
  readonly default_country?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly group_id?: string | undefined
}

const invalid = (path: ReadonlyArray<string>, reason: string, message: string, extra: Record<string, unknown> = {}) =>
  new Errors.ValidationError({
    message: "Request validation failed",
    details: { reason, ...extra, issues: [{ path, message }] }
  })

export class ContactImports extends Effect.Service<ContactImports>()("@switchboard/service-api/ContactImports", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions.Transactions
    const repo = yield* ContactImportsRepo.ContactImportsRepo
    const groups = yield* ContactGroupsRepo.ContactGroupsRepo
    const idempotency = yield* Idempotency
    const now = Effect.map(Clock.currentTimeMillis, Schemas.toTimestamp)

    const create = Effect.fn("ContactImports.create")(
      function*(workspaceId: string, input: ImportInput, idempotencyKey: string | undefined) {
        return yield* idempotency.run(
          { workspaceId, key: idempotencyKey, body: input, response: Contacts.ContactImport },
          (complete) =>
            Effect.gen(function*() {
              const bytes = Buffer.from(input.file, "base64")
              if (bytes.length > ContactCsv.MAX_IMPORT_BYTES) {
                return yield* new Errors.PayloadTooLarge({
                  message: `The decoded file exceeds ${ContactCsv.MAX_IMPORT_BYTES} bytes`,
                  details: { limit_bytes: ContactCsv.MAX_IMPORT_BYTES }
                })
              }
              const country = input.default_country
              if (country !== undefined && !ContactCsv.isCountryCode(country)) {
                return yield* invalid(["default_country"], "unknown_country", "Not a supported country code")
              }
              if (input.group_id !== undefined) {
                const known = yield* groups.existingIds(workspaceId, [input.group_id])
                if (known.size === 0) return yield* groupNotFound(input.group_id)
              }
              // bytes that are not UTF-8 become U+FFFD, and so does U+0000 (Postgres text cannot hold
              // it): the rows holding them fail with `invalid_text`, the rest import
              const text = bytes.toString("utf8").replaceAll("\u0000", ContactFields.REPLACEMENT_CHARACTER)
              // parsed here only to count rows and refuse a file that cannot be a contact list
              const parsed = ContactCsv.parseContactCsv(
                text,
                country !== undefined && ContactCsv.isCountryCode(country) ? country : undefined
              )
              if (parsed._tag === "Refused") {
                return yield* invalid(
                  ["file"],
                  parsed.reason,
                  parsed.reason === "missing_phone_number_column"
                    ? "The header row has no phone_number column"
                    : parsed.reason === "no_header"
                    ? "The file has no header row"
                    : "The file cannot be read as CSV"
                )
              }
              if (parsed.rows.length > ContactCsv.MAX_IMPORT_ROWS) {
                return yield* invalid(
                  ["file"],
                  "too_many_rows",
                  `Expected at most ${ContactCsv.MAX_IMPORT_ROWS} data rows`,
                  {
                    limit: ContactCsv.MAX_IMPORT_ROWS
                  }
                )
              }
              const id = yield* Ids.newId("imp")
              return yield* transactions.run(Effect.gen(function*() {
                yield* repo.insert({
                  id,
                  workspaceId,
                  onConflict: input.on_conflict ?? "skip",
                  defaultCountry: country ?? null,
                  tags: Contacts.normalizeTags(input.tags ?? []),
                  groupId: input.group_id ?? null,
                  file: text,
                  totalRows: parsed.rows.length,
                  now: yield* now
                })
                const created = Option.getOrThrow(yield* repo.find(workspaceId, id))
                yield* complete(created)
                return created
              }))
            })
        )
      }
    )

    const get = Effect.fn("ContactImports.get")(function*(workspaceId: string, id: string) {
      const found = yield* repo.find(workspaceId, id)
      if (Option.isNone(found)) {
        return yield* new Errors.NotFound({
          message: `No contact import ${id} in this workspace`,
          details: { resource: "contact_import", id }
        })
      }
      return found.value
    })

    const list = Effect.fn("ContactImports.list")(function*(
      workspaceId: string,
      query: { readonly limit?: number | undefined; readonly after?: Pagination.CursorPosition | undefined }
    ) {
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      return Pagination.toPage(yield* repo.list(workspaceId, limit, query.after), limit, (i) => i)
    })

    return { create, get, list } as const
  }),
  dependencies: [
    Transactions.Transactions.Default,
    ContactImportsRepo.ContactImportsRepo.Default,
    ContactGroupsRepo.ContactGroupsRepo.Default,
    Idempotency.Default
  ]
}) {}
