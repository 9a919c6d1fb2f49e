/**
 * The rows `ContactsRepo` reads: a contact with its group ids, decoded to the domain's `Contact`
 * (`ContactRow`), and the few columns its writes read back (ids, whether a row was created).
 */
import { Contacts, Ids } from "@switchboard/domain"
import { Schema } from "effect"
import { decodeRows, IdRow, iso, isoOrNull, TimestampColumn } from "../Rows.js"

export const ContactIdRow = IdRow("cnt")
export const decodeContactIds = decodeRows(ContactIdRow)
/** `upsertContact`'s row: the contact's id and whether this statement created it. */
export const decodeUpserted = decodeRows(Schema.Struct({ id: Ids.Id("cnt"), created: Schema.Boolean }))
/** `importBatch`'s rows: each id written and whether it was inserted (not updated). */
export const decodeImported = decodeRows(Schema.Struct({ id: Ids.Id("cnt"), inserted: Schema.Boolean }))
export const decodePhones = decodeRows(Schema.Struct({ phone_number: Schema.String }))

/**
 * A row of `contacts` with its group ids decoded to the domain's `Contact`: the one shape of the resource
 * (docs/ARCHITECTURE.md "Adding a resource"). Ids checked and typed (`cnt_...`, `grp_...`) while decoding.
 */
export const ContactRow = Schema.transform(
  Schema.Struct({
    id: Ids.Id("cnt"),
    phone_number: Schema.NullOr(Schema.String),
    whatsapp_lid: Schema.NullOr(Schema.String),
    name: Schema.NullOr(Schema.String),
    email: Schema.NullOr(Schema.String),
    attributes: Schema.Record({ key: Schema.String, value: Schema.String }),
    tags: Schema.Array(Schema.String),
    group_ids: Schema.Array(Ids.Id("grp")),
    whatsapp_status: Schema.NullOr(Schema.Literal("on_whatsapp", "not_on_whatsapp")),
    whatsapp_checked_at: Schema.NullOr(TimestampColumn),
    created_at: TimestampColumn,
    updated_at: TimestampColumn
  }),
  Contacts.Contact,
  {
    strict: true,
    decode: ({ whatsapp_checked_at, whatsapp_status, ...row }) => ({
      ...row,
      object: "contact" as const,
      whatsapp: { status: whatsapp_status ?? "unknown" as const, checked_at: isoOrNull(whatsapp_checked_at) },
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at)
    }),
    encode: ({ object: _, whatsapp, ...contact }) => ({
      ...contact,
      whatsapp_status: whatsapp.status === "unknown" ? null : whatsapp.status,
      whatsapp_checked_at: whatsapp.checked_at
    })
  }
)
export const decodeContacts = Schema.decodeUnknown(Schema.Array(ContactRow))
