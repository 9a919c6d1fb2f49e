/** The address book's records (README "Contacts"): contacts, groups and tag counts. */
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

export class Contact extends Schema.Class<Contact>("Contact")({
  id: Id("cnt"),
  object: Schema.Literal("contact"),
  phone_number: E164.annotations({ description: "E.164; unique per workspace" }),
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  attributes: Attributes,
  tags: Schema.Array(Schema.String).annotations({ description: "Normalised tags (trimmed, lower-case)" }),
  group_ids: Schema.Array(Id("grp")).annotations({ description: "Groups the contact belongs to" }),
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
