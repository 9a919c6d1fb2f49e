/**
 * Two more checks of a raw JSON body, in one pass over the text, after `JsonGuard` (so depth is
 * bounded), both 422 at the member (docs/API.md, OpenAPI description):
 * - a member named twice in one object (`{"to":"a","to":"b"}`): `JSON.parse` keeps the last one
 *   silently, another parser on the way (a proxy, a signature check, a log) may keep the first;
 * - a lone surrogate escape (`"\ud800"` without its pair): not a character, and Postgres refuses
 *   it in `jsonb` (a 500 once the request was accepted) and replaces it with U+FFFD in `text`.
 */
import { ContractNames, type Issues } from "@switchboard/api"

interface Level {
  readonly keys: Set<string> | undefined
  /** the member name or array index under which the next value sits */
  at: string | number
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

const LONE = "Must not contain a lone surrogate"

/** The first issue found, or `undefined`. Malformed JSON is left to the decoder. */
export const check = (text: string): ReadonlyArray<Issues.Issue> | undefined => {
  const stack: Array<Level> = []
  const mayHaveSurrogates = /\\u[dD][89a-fA-F]/.test(text)
  const pathHere = () => stack.map((l) => l.at)
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22 /* " */) {
      const start = i
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i)
        if (d === 0x5c /* \ */) i++
        else if (d === 0x22) break
      }
      const level = stack[stack.length - 1]
      let j = i + 1
      while (j < text.length && isSpace(text.charCodeAt(j))) j++
      const keys = text.charCodeAt(j) === 0x3a /* : */ ? level?.keys : undefined
      if (keys === undefined && !mayHaveSurrogates) continue
      let value: string
      try {
        value = JSON.parse(text.slice(start, i + 1)) as string
      } catch {
        return undefined
      }
      if (keys === undefined) {
        if (LONE_SURROGATE.test(value)) return [{ path: ContractNames.declaredPrefix(pathHere()), message: LONE }]
        continue
      }
      // a member name is reported at its parent: the name itself is submitted data
      if (LONE_SURROGATE.test(value)) {
        return [{ path: ContractNames.declaredPrefix(pathHere().slice(0, -1)), message: LONE }]
      }
      level!.at = value
      if (keys.has(value)) {
        // named only when the contract declares the name; the client's own names are not repeated
        const path = ContractNames.declaredPrefix(pathHere())
        return [{
          path,
          message: path.length < stack.length ? "A member is given more than once" : "Member given more than once"
        }]
      }
      keys.add(value)
    } else if (c === 0x7b /* { */) {
      stack.push({ keys: new Set(), at: "" })
    } else if (c === 0x5b /* [ */) {
      stack.push({ keys: undefined, at: 0 })
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop()
    } else if (c === 0x2c /* , */) {
      const level = stack[stack.length - 1]
      if (level !== undefined && level.keys === undefined) level.at = (level.at as number) + 1
    }
  }
  return undefined
}
