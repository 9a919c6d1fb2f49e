/**
 * The `Idempotency-Key` request header, one declaration for every route that takes it (sends,
 * replies, template test-sends, contact imports, media uploads): 1 to 255 characters that an HTTP
 * header carries as they are (`FIELD_VALUE`). What a key does on each route is in that route's
 * description.
 */
import { Characters } from "@switchboard/domain"
import { Schema } from "effect"

/**
 * An HTTP field value as RFC 9110 section 5.5 defines it: visible ASCII and the Latin-1 range
 * (`obs-text`), spaces and tabs only between them. A line break cannot be sent (a client refuses
 * it, or it would start another header), a character above U+00FF is not one byte, and the spaces
 * at either end are dropped on the way: a key with any of them could not arrive as it was written.
 */
export const FIELD_VALUE = /^[\x21-\x7E\x80-\xFF](?:[\x20-\x7E\x80-\xFF\t]*[\x21-\x7E\x80-\xFF])?$/

export const header = Schema.optional(
  Schema.String.pipe(
    Characters.minCharacters(1),
    Characters.maxCharacters(255),
    Schema.pattern(FIELD_VALUE, {
      message: () =>
        "Expected characters an HTTP header carries as they are: no line break or other control character, none above U+00FF, no space at either end"
    })
  )
)
