import { assert, describe, it } from "@effect/vitest"
import { Emoji } from "@switchboard/domain"
import { Either, Schema } from "effect"

const decode = Schema.decodeUnknownEither(Emoji.ReactionEmoji)

describe("Emoji", () => {
  it("takes one emoji as a keyboard sends it: flags, skin tones, families, keycaps, text-style pictographs", () => {
    for (const emoji of ["👍", "❤️", "❤", "🇩🇪", "👍🏽", "👨‍👩‍👧", "#️⃣", "☺", "🫠"]) {
      assert.isTrue(Emoji.isOneEmoji(emoji), emoji)
      assert.isTrue(Either.isRight(decode(emoji)), emoji)
    }
  })

  it("takes an empty string (the reaction removed)", () => {
    assert.isTrue(Either.isRight(decode("")))
  })

  it("refuses text, spaces, digits, noncharacters and two emojis", () => {
    for (const text of ["abc", " ", "1", "#", "\uffff", "👍👍", "👍 ", "a👍", "\u200d"]) {
      assert.isFalse(Emoji.isOneEmoji(text), JSON.stringify(text))
      assert.isTrue(Either.isLeft(decode(text)), JSON.stringify(text))
    }
  })
})
