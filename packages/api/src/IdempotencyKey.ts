/**
 * The `Idempotency-Key` request header, one declaration for every route that takes it (sends,
 * replies, template test-sends, contact imports, media uploads): 1 to 255 characters. What a key
 * does on each route is in that route's description.
 */
import { Characters } from "@switchboard/domain"
import { Schema } from "effect"

export const header = Schema.optional(Schema.String.pipe(Characters.minCharacters(1), Characters.maxCharacters(255)))
