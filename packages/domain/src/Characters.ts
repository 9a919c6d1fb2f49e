/**
 * What the contract calls a character, for every limit it states ("at most 4 096 characters"):
 * one Unicode code point, whatever its UTF-16 length (docs/API.md). An emoji outside the Basic
 * Multilingual Plane counts 1, as JSON Schema's `maxLength` counts it, not the 2 UTF-16 units
 * JavaScript's `length` sees. Every request schema states its limits with these filters.
 */
import { Schema } from "effect"

/** Characters as the API counts them: Unicode code points. */
export const characterCount = (s: string): number => {
  let n = 0
  for (const _ of s) n++
  return n
}

/**
 * Whether `s` has at most `max` code points, without counting when its UTF-16 length decides
 * (a code point is 1 or 2 units): a large body is judged at once.
 */
export const hasAtMostCharacters = (s: string, max: number): boolean =>
  s.length <= max ? true : s.length > 2 * max ? false : characterCount(s) <= max

/** Whether `s` has at least `min` code points (counted only when its length does not decide). */
export const hasAtLeastCharacters = (s: string, min: number): boolean =>
  s.length < min ? false : s.length >= 2 * min ? true : characterCount(s) >= min

/** At most `max` characters (code points); OpenAPI shows `maxLength`, which counts the same. */
export const maxCharacters =
  (max: number, message = `Expected at most ${max} characters`) =>
  <A extends string, I, R>(self: Schema.Schema<A, I, R>) =>
    self.pipe(Schema.filter((s: A) => hasAtMostCharacters(s, max), {
      message: () => message,
      description: `at most ${max} characters (Unicode code points)`,
      jsonSchema: { maxLength: max }
    }))

/** At least `min` characters (code points); OpenAPI shows `minLength`. */
export const minCharacters = (
  min: number,
  message = min === 1 ? "Expected a non-empty string" : `Expected at least ${min} characters`
) =>
<A extends string, I, R>(self: Schema.Schema<A, I, R>) =>
  self.pipe(Schema.filter((s: A) => hasAtLeastCharacters(s, min), {
    message: () => message,
    description: `at least ${min} characters (Unicode code points)`,
    jsonSchema: { minLength: min }
  }))

/**
 * A character a reader sees: not whitespace (JavaScript's or Unicode's), not a format or control
 * character nor one Unicode says to ignore (zero-width spaces, joiners, soft hyphen, the Hangul
 * fillers and the braille blank that make a "blank" WhatsApp message).
 */
const VISIBLE = /[^\s\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\u2800]/u

/** Whether `s` holds at least one character a reader sees (`VISIBLE`). */
export const hasVisibleCharacter = (s: string): boolean => VISIBLE.test(s)

/** What every door says of a text with no visible character (docs/API.md "Messages"). */
export const NOT_VISIBLE_MESSAGE = "Expected text, not only whitespace or invisible characters"

/**
 * At least one visible character: the one rule of every text that reaches a reader (a send's or a
 * reply's `text.body`, a simulated inbound text, a template's body and rendered text, a call
 * policy's `reply_text`). A text of spaces, zero-width or other invisible characters alone would
 * go out as an empty-looking message.
 */
export const visibleText = (message = NOT_VISIBLE_MESSAGE) => <A extends string, I, R>(self: Schema.Schema<A, I, R>) =>
  self.pipe(Schema.filter((s: A) => hasVisibleCharacter(s), {
    message: () => message,
    description: "at least one visible character (not only whitespace or invisible characters)"
  }))

/** `min..max` characters (code points). */
export const characters = (min: number, max: number) => <A extends string, I, R>(self: Schema.Schema<A, I, R>) =>
  self.pipe(minCharacters(min), maxCharacters(max))

/** U+FFFD, the replacement character: what stands for a character that cannot be kept. */
export const REPLACEMENT = "\uFFFD"

/**
 * `value` as Postgres can store it: every U+0000 (which neither `text` nor `jsonb` can hold) in
 * its strings replaced by U+FFFD, through plain objects and arrays; other values (numbers, bytes,
 * class instances) and the members named in `opaque` (a provider's download handle) are kept as
 * they are. For what a provider hands over, which no request validation has seen: a contact's text
 * with U+0000 is recorded with U+FFFD in its place rather than refused by the database and lost.
 * The same value (`===`) when there is nothing to replace.
 */
export const storable = <A>(value: A, opaque: ReadonlyArray<string> = []): A => {
  if (typeof value === "string") {
    return (value.includes("\u0000") ? value.replaceAll("\u0000", REPLACEMENT) : value) as A
  }
  if (Array.isArray(value)) {
    const items = value.map((item) => storable(item, opaque))
    return (items.every((item, i) => item === value[i]) ? value : items) as A
  }
  if (value === null || typeof value !== "object") return value
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return value
  let changed = false
  const out: Record<string, unknown> = {}
  for (const [key, member] of Object.entries(value)) {
    const kept = opaque.includes(key) ? member : storable(member, opaque)
    if (kept !== member) changed = true
    out[key] = kept
  }
  return (changed ? out : value) as A
}
