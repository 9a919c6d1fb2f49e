/**
 * The rules of a contact's fields, whatever the door it comes through (docs/API.md "Contacts"): the
 * API's request schemas are built from them, and a contact import checks each row with them, so
 * a contact an import creates can always be sent back through `PATCH` as it is. Limits count
 * characters as code points (`Characters.ts`).
 */
import { Schema } from "effect"
import { maxCharacters, minCharacters } from "./Characters.js"

export const CONTACT_NAME_MAX = 256
export const CONTACT_EMAIL_MAX = 254
export const ATTRIBUTE_KEY_MAX = 64
export const ATTRIBUTE_VALUE_MAX = 1024
export const MAX_ATTRIBUTES = 50

const EMAIL = /^[^\s@]+@[^\s@]+$/

export const ContactName = Schema.String.pipe(maxCharacters(CONTACT_NAME_MAX))

export const ContactEmail = Schema.String.pipe(
  maxCharacters(CONTACT_EMAIL_MAX),
  Schema.pattern(EMAIL, { message: () => "Expected an e-mail address" })
)

export const AttributeKey = Schema.String.pipe(minCharacters(1), maxCharacters(ATTRIBUTE_KEY_MAX))
export const AttributeValue = Schema.String.pipe(maxCharacters(ATTRIBUTE_VALUE_MAX))

export const ContactAttributes = Schema.Record({ key: AttributeKey, value: AttributeValue }).pipe(
  Schema.filter((a) => Object.keys(a).length <= MAX_ATTRIBUTES || `Expected at most ${MAX_ATTRIBUTES} attributes`)
).annotations({
  description:
    `String to string; at most ${MAX_ATTRIBUTES} keys of 1..${ATTRIBUTE_KEY_MAX} characters, values <= ${ATTRIBUTE_VALUE_MAX} characters`
})

/** Why a contact's imported fields are refused (the row's error code), or none. */
export type ContactFieldProblem =
  | { readonly code: "invalid_name"; readonly column: "name"; readonly message: string }
  | { readonly code: "invalid_email"; readonly column: "email"; readonly message: string }
  | { readonly code: "too_many_attributes"; readonly column: null; readonly message: string }
  | { readonly code: "invalid_attribute"; readonly column: string | null; readonly message: string }

const isName = Schema.is(ContactName)
const isEmail = Schema.is(ContactEmail)
const isKey = Schema.is(AttributeKey)
const isValue = Schema.is(AttributeValue)

/**
 * The first problem of a contact's name, e-mail and attributes under the API's rules; messages
 * name the rule, never the value (an over-long attribute name is not repeated either).
 */
export const contactFieldProblem = (fields: {
  readonly name: string | null
  readonly email: string | null
  readonly attributes: Readonly<Record<string, string>>
}): ContactFieldProblem | undefined => {
  if (fields.name !== null && !isName(fields.name)) {
    return {
      code: "invalid_name",
      column: "name",
      message: `Expected a name of at most ${CONTACT_NAME_MAX} characters`
    }
  }
  if (fields.email !== null && !isEmail(fields.email)) {
    return { code: "invalid_email", column: "email", message: "Not an e-mail address" }
  }
  const keys = Object.keys(fields.attributes)
  if (keys.length > MAX_ATTRIBUTES) {
    return { code: "too_many_attributes", column: null, message: `Expected at most ${MAX_ATTRIBUTES} attributes` }
  }
  for (const key of keys) {
    if (!isKey(key)) {
      return {
        code: "invalid_attribute",
        column: null,
        message: `An attribute column's name is over ${ATTRIBUTE_KEY_MAX} characters`
      }
    }
    if (!isValue(fields.attributes[key]!)) {
      return {
        code: "invalid_attribute",
        column: key,
        message: `Expected an attribute value of at most ${ATTRIBUTE_VALUE_MAX} characters`
      }
    }
  }
  return undefined
}

/** U+FFFD: what bytes that are not UTF-8 (and U+0000, which text cannot hold) become in an import. */
export const REPLACEMENT_CHARACTER = "\uFFFD"

/** Whether `text` holds a character a stored contact field cannot take as sent. */
export const hasLostText = (text: string): boolean => text.includes(REPLACEMENT_CHARACTER)
