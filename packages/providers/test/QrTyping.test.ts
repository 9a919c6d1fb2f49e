import { assert, describe, it } from "@effect/vitest"
import {
  firstAfterPause,
  TYPING_AFTER_PAUSE_MS,
  TYPING_MAX_MS,
  TYPING_MIN_MS,
  typingBefore,
  typingDurationMs
} from "../src/qr/QrTyping.js"

const target = { providerMessageId: "ABC", fromMe: false, body: "hi" }

describe("QrTyping", () => {
  it("types longer for longer messages, between the shortest and the longest typing", () => {
    assert.strictEqual(typingDurationMs(0), TYPING_MIN_MS)
    assert.strictEqual(typingDurationMs(2), 670)
    assert.strictEqual(typingDurationMs(40), 2_000)
    assert.isBelow(typingDurationMs(10), typingDurationMs(30))
    assert.strictEqual(typingDurationMs(5_000), TYPING_MAX_MS)
    assert.strictEqual(typingDurationMs(-3), TYPING_MIN_MS)
  })

  it("types before a conversation's first message after a pause only", () => {
    const now = 1_000_000_000
    assert.isTrue(firstAfterPause(undefined, now))
    assert.isFalse(firstAfterPause(now - 60_000, now))
    assert.isFalse(firstAfterPause(now - TYPING_AFTER_PAUSE_MS + 1, now))
    assert.isTrue(firstAfterPause(now - TYPING_AFTER_PAUSE_MS, now))
  })

  it("counts what a person would type: the text or the caption (code points), nothing for a reaction; off is off", () => {
    const now = 5_000_000
    const base = { enabled: true, lastSentAt: undefined, now }
    assert.strictEqual(typingBefore({ ...base, text: "Hello", content: undefined }), 775)
    // an emoji is one character typed, not two UTF-16 units
    assert.strictEqual(typingBefore({ ...base, text: "👋👋", content: { _tag: "text" } }), 670)
    assert.isUndefined(typingBefore({ ...base, text: "", content: { _tag: "reaction", target, emoji: "👍" } }))
    const image = {
      _tag: "media",
      kind: "image",
      mediaId: "m",
      mimeType: "image/png",
      sizeBytes: 1,
      filename: null,
      voice: false
    } as const
    assert.strictEqual(typingBefore({ ...base, text: "", content: { ...image, caption: null } }), TYPING_MIN_MS)
    assert.strictEqual(typingBefore({ ...base, text: "", content: { ...image, caption: "our menu" } }), 880)
    assert.strictEqual(
      typingBefore({
        ...base,
        text: "",
        content: { _tag: "location", latitude: 1, longitude: 2, name: null, address: null }
      }),
      TYPING_MIN_MS
    )
    assert.isUndefined(typingBefore({ ...base, enabled: false, text: "Hello", content: undefined }))
    assert.isUndefined(typingBefore({ ...base, lastSentAt: now - 1_000, text: "Hello", content: undefined }))
  })
})
