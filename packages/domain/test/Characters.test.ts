import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  characterCount,
  hasAtLeastCharacters,
  hasAtMostCharacters,
  maxCharacters,
  storable
} from "../src/Characters.js"

const EMOJI = "\u{1F600}"

describe("characters are code points", () => {
  it("counts an astral character once", () => {
    expect(characterCount(EMOJI.repeat(3))).toBe(3)
    expect(characterCount(`a${EMOJI}é`)).toBe(3)
  })

  it("judges the limits at their boundary, whichever the UTF-16 length", () => {
    expect(hasAtMostCharacters(EMOJI.repeat(4), 4)).toBe(true)
    expect(hasAtMostCharacters(EMOJI.repeat(5), 4)).toBe(false)
    expect(hasAtMostCharacters(`${EMOJI}abc`, 4)).toBe(true)
    expect(hasAtLeastCharacters(EMOJI, 2)).toBe(false)
    expect(hasAtLeastCharacters(EMOJI.repeat(2), 2)).toBe(true)
  })

  it("decodes with the limit in characters and says it in the message", () => {
    const decode = Schema.decodeUnknownEither(Schema.String.pipe(maxCharacters(2)))
    expect(decode(EMOJI.repeat(2))._tag).toBe("Right")
    const refused = decode(EMOJI.repeat(3))
    expect(refused._tag).toBe("Left")
  })
})

describe("storable: what a provider hands over, as Postgres can hold it", () => {
  it("replaces U+0000 with U+FFFD in strings of plain objects and arrays, and nothing else", () => {
    const bytes = new Uint8Array([0, 1])
    const source = { url: "a\u0000b" }
    const input = { body: { _tag: "text", body: "a\u0000b\u0000" }, list: ["x\u0000", 1, null], bytes, source }
    const out = storable(input, ["source"])
    expect(out).toEqual({ body: { _tag: "text", body: "a\uFFFDb\uFFFD" }, list: ["x\uFFFD", 1, null], bytes, source })
    expect(out.bytes).toBe(bytes)
    expect(out.source).toBe(source)
    expect(input.body.body).toBe("a\u0000b\u0000")
  })

  it("answers the same value when there is nothing to replace", () => {
    const input = { body: { _tag: "text", body: "hello" }, list: ["x"] }
    expect(storable(input)).toBe(input)
  })
})
