import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { essenceOf, format, isVoiceNoteType, normalize, parseStrict, voiceNoteType } from "../src/MediaType.js"

describe("MediaType", () => {
  it("reads a type with parameters, upper case and spaces as one canonical text", () => {
    expect(normalize("audio/ogg; codecs=opus")).toEqual(Option.some("audio/ogg; codecs=opus"))
    expect(normalize("AUDIO/OGG;Codecs=opus")).toEqual(Option.some("audio/ogg; codecs=opus"))
    expect(normalize("  Audio/Ogg ;  codecs=\"opus\"  ")).toEqual(Option.some("audio/ogg; codecs=opus"))
    expect(normalize("text/plain; charset=\"a b\"")).toEqual(Option.some("text/plain; charset=\"a b\""))
    expect(essenceOf("IMAGE/JPEG; q=1")).toBe("image/jpeg")
  })

  it("strips surrounding CR/LF and refuses a header smuggled after one", () => {
    expect(normalize("image/jpeg\r\n")).toEqual(Option.some("image/jpeg"))
    expect(normalize("image/jpeg\r\nX-Injected: 1")).toEqual(Option.none())
  })

  it("names no type for text that is not type/subtype, wildcards and mojibake", () => {
    for (
      const text of ["*/*", "image/*", "image/", "/png", "image", "", "Ã©/x", "image/pÃ±g", "a/b/c", "image/png x"]
    ) {
      expect(normalize(text), JSON.stringify(text)).toEqual(Option.none())
    }
    expect(essenceOf("*/*")).toBe("")
  })

  it("sends a voice note as audio/ogg; codecs=opus", () => {
    expect(voiceNoteType("audio/ogg")).toBe("audio/ogg; codecs=opus")
    expect(voiceNoteType("Audio/OGG; Codecs=opus")).toBe("audio/ogg; codecs=opus")
    expect(voiceNoteType("audio/mpeg")).toBe("audio/mpeg")
    expect(voiceNoteType("audio/ogg; codecs=opus; rate=48000")).toBe("audio/ogg; codecs=opus")
    expect(voiceNoteType("audio/ogg; codecs=OPUS")).toBe("audio/ogg; codecs=opus")
  })

  it("takes only Ogg Opus as a voice note", () => {
    for (const type of ["audio/ogg", "audio/ogg; codecs=opus", "Audio/OGG; Codecs=OPUS"]) {
      expect(isVoiceNoteType(type), type).toBe(true)
    }
    for (const type of ["audio/mpeg", "audio/aac", "audio/mp4", "audio/ogg; codecs=vorbis", "video/ogg", "*/*", ""]) {
      expect(isVoiceNoteType(type), type).toBe(false)
    }
  })

  it("reads a client's type strictly: every parameter name=value, no control character", () => {
    const strict = (text: string) => Option.map(parseStrict(text), format)
    for (
      const [text, canonical] of [
        ["audio/ogg; codecs=opus", "audio/ogg; codecs=opus"],
        ["  Audio/Ogg ;  codecs=\"opus\"\t", "audio/ogg; codecs=opus"],
        ["text/plain; charset=\"a;b=c\"", "text/plain; charset=\"a;b=c\""],
        ["text/plain; a=\"q\\\"x\"", "text/plain; a=\"q\\\"x\""],
        ["image/png;", "image/png"],
        ["image/png;;q=1", "image/png; q=1"]
      ]
    ) {
      expect(strict(text!), text).toEqual(Option.some(canonical))
    }
    for (
      const text of [
        "audio/ogg; codecs=opus\r\nX: 1",
        "image/jpeg\r\n",
        "\r\nimage/jpeg",
        "image/jpeg\u0000",
        "image/png; charset",
        "image/png; =x",
        "image/png; a=",
        "image/png; a=b c",
        "image/png; a=\"unclosed",
        "image/png; a=1; A=2",
        "image/png; a=\u00e9",
        "*/*"
      ]
    ) {
      expect(strict(text), JSON.stringify(text)).toEqual(Option.none())
    }
    // the lenient reader (provider input) still names a type
    expect(normalize("audio/ogg; codecs=opus\r\nX: 1")).toEqual(Option.some("audio/ogg"))
  })
})
