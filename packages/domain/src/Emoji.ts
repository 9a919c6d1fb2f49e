/**
 * A reaction's emoji (docs/API.md "Messages"): one emoji, as a person picks it from a keyboard
 * (one grapheme cluster that Unicode lists as an emoji: flags, skin tones, families and keycaps
 * included), or `""` to remove the reaction. Text, spaces and noncharacters are refused.
 */
import { Schema } from "effect"
import { maxCharacters } from "./Characters.js"

/** Unicode's recommended emoji (`\p{RGI_Emoji}`, a property of strings: the `v` flag, Node 20). */
const RGI_EMOJI = new RegExp("^\\p{RGI_Emoji}$", "v")

/** A pictograph without its emoji presentation selector (`☺` for `☺️`), as some keyboards send it. */
const PICTOGRAPH = /^\p{Extended_Pictographic}\uFE0F?$/u

const graphemes = new Intl.Segmenter("en", { granularity: "grapheme" })

/** Whether `text` is exactly one emoji. */
export const isOneEmoji = (text: string): boolean => {
  const clusters = graphemes.segment(text)[Symbol.iterator]()
  const first = clusters.next()
  if (first.done === true || clusters.next().done !== true) return false
  return RGI_EMOJI.test(text) || PICTOGRAPH.test(text)
}

const MESSAGE = "Expected one emoji, or \"\" to remove the reaction"

/** One emoji or `""` (a reaction removed); at most 32 characters before anything segments it. */
export const ReactionEmoji = Schema.String.pipe(
  maxCharacters(32, MESSAGE),
  Schema.filter((s) => s === "" || isOneEmoji(s), {
    message: () => MESSAGE,
    description: "one emoji (a single grapheme Unicode lists as an emoji), or \"\" to remove the reaction"
  })
).annotations({
  identifier: "ReactionEmoji",
  examples: ["👍", ""],
  // generated values (contract fuzzing) from emojis a keyboard sends, not from random text
  arbitrary: () => (fc) => fc.constantFrom("👍", "❤️", "😂", "🇩🇪", "👍🏽", "👨‍👩‍👧", "#️⃣", "")
})
