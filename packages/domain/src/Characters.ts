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

/** `min..max` characters (code points). */
export const characters = (min: number, max: number) => <A extends string, I, R>(self: Schema.Schema<A, I, R>) =>
  self.pipe(minCharacters(min), maxCharacters(max))
