/**
 * A JSON body that names a member twice (`{"to":"a","to":"b"}`) is refused with 422 at that
 * member (README "API", OpenAPI description): `JSON.parse` keeps the last one silently, another
 * parser on the way (a proxy, a signature check, a log) may keep the first, and the two would
 * disagree about what was sent. One pass over the text, run after `JsonGuard` (depth is bounded).
 */
import type { Issue } from "./Issues.js"

interface Level {
  readonly keys: Set<string> | undefined
  /** the member name or array index under which the next value sits */
  at: string | number
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/** The first duplicated member's issue, or `undefined`. Malformed JSON is left to the decoder. */
export const check = (text: string): ReadonlyArray<Issue> | undefined => {
  const stack: Array<Level> = []
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
      if (level?.keys === undefined) continue
      let j = i + 1
      while (j < text.length && isSpace(text.charCodeAt(j))) j++
      if (text.charCodeAt(j) !== 0x3a /* : */) continue
      let key: string
      try {
        key = JSON.parse(text.slice(start, i + 1)) as string
      } catch {
        return undefined
      }
      level.at = key
      if (level.keys.has(key)) {
        return [{
          path: [...stack.slice(0, -1).map((l) => l.at), key],
          message: "Member given more than once"
        }]
      }
      level.keys.add(key)
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
