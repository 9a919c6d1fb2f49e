import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { characterCount, hasAtLeastCharacters, hasAtMostCharacters, maxCharacters } from "../src/Characters.js"

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
