/**
 * Checks a raw JSON body before anything decodes it, in one pass over the text:
 * - nesting deeper than `MAX_JSON_DEPTH` is refused (schema decoding and error formatting recurse
 *   per level: 10 000 levels overflowed the stack and answered 500);
 * - U+0000 in any string or member name is refused (Postgres text cannot hold it), and the
 *   member is named, never the value.
 * Both are 422 `VALIDATION_ERROR`, the same for every JSON route (docs/API.md, OpenAPI
 * description).
 */
import type { Issues } from "@switchboard/api"

/** Deepest nesting of arrays and objects accepted in a request body. */
export const MAX_JSON_DEPTH = 64

/** Paths of the members (or the member names) that hold U+0000 in a parsed value. */
const nulPaths = (value: unknown, path: Array<string | number>, out: Array<Array<string | number>>) => {
  if (typeof value === "string") {
    if (value.includes("\u0000")) out.push([...path])
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => nulPaths(item, [...path, i], out))
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      // a member name with U+0000 is reported at its parent: the name itself is submitted data
      if (key.includes("\u0000")) out.push([...path])
      else nulPaths(item, [...path, key], out)
    }
  }
}

/**
 * `None` when the body may be decoded; otherwise the issues to answer with. Malformed JSON is left
 * to the decoder (it answers its own 422).
 */
export const check = (text: string): ReadonlyArray<Issues.Issue> | undefined => {
  let depth = 0
  let inString = false
  let sawNul = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c /* \ */) {
        // `\u0000` (any case of the hex digits is only digits here) is an escaped U+0000
        if (text.charCodeAt(i + 1) === 0x75 /* u */ && text.startsWith("0000", i + 2)) sawNul = true
        i++
      } else if (c === 0x22 /* " */) {
        inString = false
      } else if (c === 0) {
        sawNul = true
      }
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      depth++
      if (depth > MAX_JSON_DEPTH) {
        return [{ path: ["body"], message: `Nested deeper than ${MAX_JSON_DEPTH} levels` }]
      }
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--
    }
  }
  if (!sawNul) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  const paths: Array<Array<string | number>> = []
  nulPaths(parsed, [], paths)
  if (paths.length === 0) return undefined
  return paths.map((path) => ({ path, message: "Must not contain the character U+0000" }))
}
