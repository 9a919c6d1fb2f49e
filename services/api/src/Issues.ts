/**
 * Schema parse failures as `details.issues`: the member path and a sentence, never the submitted
 * value (it may be huge or a secret).
 */
import { ParseResult } from "effect"

export interface Issue {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

const MAX_MESSAGE = 300

const toPathSegment = (key: PropertyKey): string | number =>
  typeof key === "number" ? key : typeof key === "symbol" ? String(key.description) : key

export const fromFormatted = (
  issues: ReadonlyArray<{ readonly _tag: string; readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>
): Array<Issue> => {
  const relevant = issues.filter((issue, _, all) =>
    // `Schema.optional(X)` also reports its "undefined" branch; drop it beside a real issue
    !(issue.message.startsWith("Expected undefined") &&
      all.some((other) => other !== issue && issue.path.every((seg, k) => other.path[k] === seg)))
  )
  const out = relevant.map((issue): Issue => {
    const path = issue.path.map(toPathSegment)
    if (issue._tag === "Unexpected") {
      return { path, message: `Unrecognized field "${String(path[path.length - 1])}"` }
    }
    if (issue._tag === "Missing") return { path, message: "Required member is missing" }
    const message = issue.message.replace(/,? actual [\s\S]*$/, "").replace(/\s+/g, " ").trim()
    return { path, message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}...` : message }
  })
  return out.length > 0 ? out : [{ path: [], message: "Invalid request" }]
}

export const fromParseError = (error: ParseResult.ParseError): Array<Issue> =>
  fromFormatted(ParseResult.ArrayFormatter.formatErrorSync(error))
