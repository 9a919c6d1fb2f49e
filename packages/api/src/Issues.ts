/**
 * Schema parse failures as `details.issues`: the member path and a sentence, never the submitted
 * value (it may be huge or a secret), and never a member name the client chose (an unknown
 * member, a key of `metadata`): the path stops at the object that holds it (`ContractNames`).
 */
import { Ids, UnknownIds } from "@switchboard/domain"
import { ParseResult } from "effect"
import { declaredPrefix } from "./ContractNames.js"

export interface Issue {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

const MAX_MESSAGE = 300

/** TypeScript or Effect syntax that a schema's own description may carry. */
const CODE_SYNTAX = /`|\$\{|\breadonly\b|\s\|\s|[{}<>]|=>/

const ID_NAMES: Record<string, string> = Object.fromEntries(
  Object.entries(Ids.IdPrefixes).map(([name, prefix]) => [prefix, name.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`)])
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

/**
 * A member the object does not take, said without its name: with the names it does take when the
 * schema lists them (`is unexpected, expected: "name" | "mode"`), else (a key of a map that breaks
 * the key's rule) what a key must be.
 */
const unexpected = (message: string): string => {
  const expectedPart = /expected: (.*)$/s.exec(message)?.[1] ?? ""
  const names = [...expectedPart.matchAll(/"([^"]*)"/g)].map((m) => m[1]!)
  if (names.length > 0 && /^("[^"]*"(\s\|\s)?)+$/.test(expectedPart.trim())) {
    return `Unknown member; this object takes ${names.join(", ")}`
  }
  const length = /maxLength\((\d+)\)/.exec(expectedPart)
  if (length) return `A member name is longer than ${length[1]} characters`
  if (/minLength\(1\)/.test(expectedPart)) return "A member name is empty"
  return "A member name is not accepted here"
}

const toPathSegment = (key: PropertyKey): string | number =>
  typeof key === "number" ? key : typeof key === "symbol" ? String(key.description) : key

/**
 * Without the "undefined" branch `Schema.optional(X)` also reports beside a real issue, and without
 * the "null" branch of an object that may be `null` (`Schema.NullOr(body)`, a body that may be
 * empty): the object came, so an issue inside it is the one to tell; "Expected null" beside it
 * only suggests sending nothing (`qr/start {"method": "code", "phone_number": "0151"}`).
 */
const relevantIssues = <I extends { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>(
  issues: ReadonlyArray<I>
): Array<I> =>
  issues.filter((issue, _, all) => {
    const inside = (other: I) => other !== issue && issue.path.every((seg, k) => other.path[k] === seg)
    if (issue.message.startsWith("Expected undefined")) return !all.some(inside)
    if (/^Expected null(,|$)/.test(issue.message)) {
      return !all.some((other) => inside(other) && other.path.length > issue.path.length)
    }
    return true
  })

export const fromFormatted = (
  issues: ReadonlyArray<{ readonly _tag: string; readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>
): Array<Issue> => {
  const relevant = relevantIssues(issues)
  const out = relevant.map((issue): Issue => {
    const full = issue.path.map(toPathSegment)
    const path = declaredPrefix(full)
    if (issue._tag === "Unexpected") {
      return { path: declaredPrefix(full.slice(0, -1)), message: unexpected(issue.message) }
    }
    if (issue._tag === "Missing") return { path, message: "Required member is missing" }
    const plain = readable(issue.message.replace(/,? actual [\s\S]*$/, "").replace(/\s+/g, " ").trim())
    // reported at the object: say that it is about one of its members
    const message = path.length < full.length ? `A member: ${plain}` : plain
    return { path, message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}...` : message }
  })
  return out.length > 0 ? orNull(oneOf(relevant, out)) : [{ path: [], message: "Invalid request" }]
}

const NULL_ISSUE = /^(A member: )?Expected null$/

/**
 * A value that may be `null` (`Schema.NullOr(x)`) and is neither: the schema library reports what
 * `x` expected and, at the same place, "Expected null", two issues that read as two demands. One
 * issue says both: "Expected an object, or null"; for the body itself "..., or no body" (an empty
 * body reads as null: `qr/start` with the JSON string `"code"`).
 */
const orNull = (issues: ReadonlyArray<Issue>): Array<Issue> => {
  const at = (issue: Issue) => JSON.stringify(issue.path)
  const nulls = new Set(issues.filter((i) => NULL_ISSUE.test(i.message)).map(at))
  const others = new Set(issues.filter((i) => !NULL_ISSUE.test(i.message)).map(at))
  return issues.flatMap((issue): Array<Issue> => {
    if (!nulls.has(at(issue)) || !others.has(at(issue))) return [issue]
    if (NULL_ISSUE.test(issue.message)) return []
    return [{ path: issue.path, message: `${issue.message}, ${issue.path.length === 0 ? "or no body" : "or null"}` }]
  })
}

const LITERAL = /^(A member: )?Expected ("[^"]*")$/

/**
 * A value none of a union's literals matched is reported once per literal by the schema library
 * (`?state=failed`: eleven "Expected ..."): one issue per member instead, naming every allowed value.
 */
const oneOf = (
  raw: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey> }>,
  issues: ReadonlyArray<Issue>
): Array<Issue> => {
  const merged: Array<Issue> = []
  const at = new Map<string, { index: number; prefix: string; values: Array<string> }>()
  issues.forEach((issue, i) => {
    const literal = LITERAL.exec(issue.message)
    if (literal === null) return void merged.push(issue)
    const key = JSON.stringify(raw[i]!.path.map(toPathSegment))
    const group = at.get(key)
    if (group === undefined) {
      at.set(key, { index: merged.length, prefix: literal[1] ?? "", values: [literal[2]!] })
      merged.push(issue)
    } else {
      group.values.push(literal[2]!)
      const values = group.values.join(", ")
      merged[group.index] = { path: issue.path, message: `${group.prefix}Expected one of ${values}` }
    }
  })
  return merged
}

export const fromParseError = (error: ParseResult.ParseError): Array<Issue> =>
  fromFormatted(ParseResult.ArrayFormatter.formatErrorSync(error))

/**
 * A request refused only because ids in it name nothing (`IdRef`, domain `Ids.ts`): the 404 of the
 * first such id's kind, naming every such member; `undefined` when anything else is wrong too
 * (then the 422 lists every issue).
 */
export const unknownIdRefusal = (
  issues: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>
) => {
  const relevant = relevantIssues(issues)
  const prefixes = relevant.map((issue) => Ids.unknownIdPrefix(issue.message))
  const first = prefixes[0]
  if (first === undefined || prefixes.some((p) => p === undefined)) return undefined
  return UnknownIds.unknownIdError(
    first,
    relevant.flatMap((issue, i) =>
      prefixes[i] === first ? [{ path: issue.path.map(toPathSegment), message: "Names nothing here" }] : []
    )
  )
}
