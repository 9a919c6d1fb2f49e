/**
 * Schema parse failures as `details.issues`: the member path and a sentence, never the submitted
 * value (it may be huge or a secret).
 */
import { IdPrefixes } from "@switchboard/domain"
import { ParseResult } from "effect"

export interface Issue {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

const MAX_MESSAGE = 300

/** TypeScript or Effect syntax that a schema's own description may carry. */
const CODE_SYNTAX = /`|\$\{|\breadonly\b|\s\|\s|[{}<>]|=>/

const ID_NAMES: Record<string, string> = Object.fromEntries(
  Object.entries(IdPrefixes).map(([name, prefix]) => [prefix, name.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`)])
)

const TYPE_WORDS: Record<string, string> = {
  string: "a string",
  number: "a number",
  boolean: "true or false",
  null: "null",
  object: "an object"
}

/**
 * A sentence for what a schema expected, when the schema library would describe it in
 * TypeScript syntax (`msg_${string}`, `{ readonly slug: ... }`, `"a" | "b"`): an id, an object,
 * a list, one of some values, or a type.
 */
const expected = (description: string): string => {
  const id = /^`([a-z]+)_\$\{string\}`$/.exec(description)
  if (id) {
    return `Expected ${ID_NAMES[id[1]!] ? `a ${ID_NAMES[id[1]!]} id` : "an id"} (${id[1]}_ followed by 26 characters)`
  }
  if (description.startsWith("{")) return "Expected an object"
  if (description.startsWith("ReadonlyArray<") || description.startsWith("readonly [") || description.startsWith("[")) {
    return "Expected a list"
  }
  if (!/[{}`]/.test(description)) {
    const words = description.split(" | ").filter((part) => part !== "undefined").map((part) =>
      /^"[^"]*"$/.test(part) ? part : TYPE_WORDS[part]
    )
    if (words.length > 0 && words.every((w) => w !== undefined)) {
      return words.every((w) => w!.startsWith("\""))
        ? `Expected one of ${words.join(", ")}`
        : `Expected ${words.join(" or ")}`
    }
  }
  return "Has the wrong type or format"
}

/** The message without code syntax: unchanged when it has none. */
const readable = (message: string): string => {
  if (!CODE_SYNTAX.test(message)) return message
  const match = /^Expected (.*)$/s.exec(message)
  return match ? expected(match[1]!.trim()) : "Has the wrong type or format"
}

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
    const message = readable(issue.message.replace(/,? actual [\s\S]*$/, "").replace(/\s+/g, " ").trim())
    return { path, message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}...` : message }
  })
  return out.length > 0 ? out : [{ path: [], message: "Invalid request" }]
}

export const fromParseError = (error: ParseResult.ParseError): Array<Issue> =>
  fromFormatted(ParseResult.ArrayFormatter.formatErrorSync(error))
