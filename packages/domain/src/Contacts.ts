/** The address book's records (docs/API.md "Contacts"): contacts, groups and tag counts. */
import { Schema } from "effect"
import { Id } from "./Ids.js"
import { E164, Timestamp } from "./Schemas.js"

/** Tags are stored trimmed and lower-case, so `VIP ` and `vip` are one tag. */
export const normalizeTag = (tag: string): string => tag.trim().toLowerCase()

/** Distinct normalised tags, in first-seen order. */
export const normalizeTags = (tags: ReadonlyArray<string>): Array<string> => [...new Set(tags.map(normalizeTag))]

export const Attributes = Schema.Record({ key: Schema.String, value: Schema.String }).annotations({
  identifier: "ContactAttributes",
  description: "Free-form string to string attributes (at most 50 keys of <= 64 characters, values <= 1024)"
})

/**
 * Whether the contact's number is on WhatsApp, as a QR channel last found out (docs/API.md
 * "Contacts"): checked before a QR channel's first send to a number, to protect the sending number.
 */
export const ContactWhatsApp = Schema.Struct({
  status: Schema.Literal("on_whatsapp", "not_on_whatsapp", "unknown").annotations({
    description:
      "`on_whatsapp` or `not_on_whatsapp`: what WhatsApp answered a QR channel of the workspace that checked the number before its first send to it (sends to a number not on WhatsApp fail with `failure.code = not_on_whatsapp`); `unknown`: never checked (no QR channel sent to it yet, or the number changed since)"
  }),
  checked_at: Schema.NullOr(Timestamp).annotations({
    description: "When WhatsApp answered the latest check; `null` while `unknown`"
  })
}).annotations({ identifier: "ContactWhatsApp" })
export type ContactWhatsApp = typeof ContactWhatsApp.Type

export class Contact extends Schema.Class<Contact>("Contact")({
  id: Id("cnt"),
  object: Schema.Literal("contact"),
  phone_number: Schema.NullOr(E164).annotations({
    description:
      "E.164; unique per workspace. null only for a sender WhatsApp named by LID alone, until it reveals the number (docs/API.md \"Contacts\")"
  }),
  whatsapp_lid: Schema.NullOr(Schema.String).annotations({
    description: "WhatsApp's private id of the contact (LID), when WhatsApp addressed them by it; unique per workspace"
  }),
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  attributes: Attributes,
  tags: Schema.Array(Schema.String).annotations({ description: "Normalised tags (trimmed, lower-case)" }),
  group_ids: Schema.Array(Id("grp")).annotations({ description: "Groups the contact belongs to" }),
  whatsapp: ContactWhatsApp,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export class ContactGroup extends Schema.Class<ContactGroup>("ContactGroup")({
  id: Id("grp"),
  object: Schema.Literal("contact_group"),
  name: Schema.String.annotations({ description: "Unique per workspace, case-insensitively" }),
  description: Schema.NullOr(Schema.String),
  member_count: Schema.Number,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export class ContactTag extends Schema.Class<ContactTag>("ContactTag")({
  object: Schema.Literal("contact_tag"),
  tag: Schema.String,
  contact_count: Schema.Number.annotations({ description: "Contacts carrying the tag" })
}) {}

export const ImportStatus = Schema.Literal("queued", "running", "completed", "failed")

export const ImportError = Schema.Struct({
  row: Schema.Number.annotations({ description: "Data row, 1-based (the header row is not counted)" }),
  line: Schema.Number.annotations({ description: "Line of the file where the row starts" }),
  column: Schema.NullOr(Schema.String),
  code: Schema.String.annotations({
    description:
      "`missing_phone_number`, `invalid_phone_number`, `invalid_email`, `invalid_row` (unreadable CSV), `duplicate_in_file` (counted as skipped) or `ENTITLEMENT_LIMIT_REACHED`"
  }),
  message: Schema.String.annotations({ description: "Why; never the value of a cell" })
}).annotations({ identifier: "ContactImportError" })

export class ContactImport extends Schema.Class<ContactImport>("ContactImport")({
  id: Id("imp"),
  object: Schema.Literal("contact_import"),
  status: ImportStatus,
  on_conflict: Schema.Literal("skip", "update"),
  default_country: Schema.NullOr(Schema.String),
  tags: Schema.Array(Schema.String),
  group_id: Schema.NullOr(Id("grp")),
  total_rows: Schema.Number.annotations({ description: "Data rows in the file (rows, not lines)" }),
  processed_rows: Schema.Number.annotations({ description: "Rows done so far; grows while `running`" }),
  created: Schema.Number,
  updated: Schema.Number,
  skipped: Schema.Number.annotations({
    description: "Numbers already present with `on_conflict: skip`, and repeats inside the file"
  }),
  failed: Schema.Number,
  errors: Schema.Array(ImportError).annotations({ description: "The first 100 failed or skipped-as-repeat rows" }),
  created_at: Timestamp,
  updated_at: Timestamp,
  completed_at: Schema.NullOr(Timestamp)
}) {}
