import { describe, expect, it } from "@effect/vitest"
import { acceptsBytes, checkFile, essence, kindOfType, oggCodec, sniff } from "../src/MediaSniff.js"

const bytes = (...parts: Array<string | ReadonlyArray<number>>) =>
  Uint8Array.from(parts.flatMap((p) => typeof p === "string" ? [...p].map((c) => c.charCodeAt(0)) : [...p]))

const JPEG = bytes([0xff, 0xd8, 0xff, 0xe0], "\0\x10JFIF\0")
const PNG = bytes([0x89], "PNG\r\n\x1a\n", [0, 0, 0, 13])
const WEBP = bytes("RIFF", [0x24, 0, 0, 0], "WEBPVP8 ")
const MP4 = bytes([0, 0, 0, 0x20], "ftypisom", [0, 0, 2, 0])
const GPP = bytes([0, 0, 0, 0x14], "ftyp3gp4", [0, 0, 0, 0])
const OGG = bytes("OggS", [0, 2, 0, 0, 0, 0, 0, 0])
const MP3 = bytes("ID3", [4, 0, 0, 0, 0, 0, 0])
const MP3_FRAME = bytes([0xff, 0xfb, 0x90, 0x64])
const AAC = bytes([0xff, 0xf1, 0x50, 0x80])
const EXE = bytes("MZ", [0x90, 0, 3, 0, 0, 0, 4, 0, 0, 0])
const GIF = bytes("GIF89a", [1, 0, 1, 0])

describe("sniff", () => {
  it("names the type of each signature the media kinds take", () => {
    expect(sniff(JPEG)).toEqual(["image/jpeg"])
    expect(sniff(PNG)).toEqual(["image/png"])
    expect(sniff(WEBP)).toEqual(["image/webp"])
    expect(sniff(MP4)).toEqual(["video/mp4", "audio/mp4"])
    expect(sniff(GPP)).toEqual(["video/3gpp"])
    expect(sniff(OGG)).toEqual(["audio/ogg"])
    expect(sniff(MP3)).toEqual(["audio/mpeg"])
    expect(sniff(MP3_FRAME)).toEqual(["audio/mpeg"])
    expect(sniff(AAC)).toEqual(["audio/aac"])
    expect(sniff(GIF)).toEqual(["image/gif"])
    expect(sniff(bytes("GIF87a"))).toEqual(["image/gif"])
  })

  it("names nothing for other bytes, a truncated signature or no bytes", () => {
    expect(sniff(EXE)).toEqual([])
    expect(sniff(bytes("%PDF-1.7"))).toEqual([])
    expect(sniff(PNG.subarray(0, 4))).toEqual([])
    expect(sniff(WEBP.subarray(0, 9))).toEqual([])
    expect(sniff(new Uint8Array(0))).toEqual([])
  })
})

describe("acceptsBytes", () => {
  it("takes bytes of the declared type when the kind takes that type", () => {
    expect(acceptsBytes("image", "image/jpeg", JPEG)).toBe(true)
    expect(acceptsBytes("sticker", "image/webp", WEBP)).toBe(true)
    expect(acceptsBytes("audio", "audio/mp4", MP4)).toBe(true)
    expect(acceptsBytes("video", "video/mp4", MP4)).toBe(true)
  })

  it("refuses bytes that are not the declared type", () => {
    expect(acceptsBytes("image", "image/jpeg", EXE)).toBe(false)
    expect(acceptsBytes("image", "image/jpeg", PNG)).toBe(false)
  })

  it("refuses a type the kind does not take, even with matching bytes", () => {
    expect(acceptsBytes("sticker", "image/png", PNG)).toBe(false)
    expect(acceptsBytes("image", "image/gif", bytes("GIF89a"))).toBe(false)
  })

  it("takes any bytes as a document", () => {
    expect(acceptsBytes("document", "application/pdf", bytes("%PDF-1.7"))).toBe(true)
    expect(acceptsBytes("document", "application/x-msdownload", EXE)).toBe(true)
  })

  it("refuses a document declared as a type every file of which has a signature the bytes lack", () => {
    // an .exe uploaded with ?kind=document as image/png was stored and served as a PNG
    expect(acceptsBytes("document", "image/png", EXE)).toBe(false)
    expect(acceptsBytes("document", "image/jpeg", EXE)).toBe(false)
    expect(acceptsBytes("document", "video/mp4", EXE)).toBe(false)
    expect(acceptsBytes("document", "image/png", PNG)).toBe(true)
    // an MP3 may start with a bare frame, which is no sure signature: taken as declared
    expect(acceptsBytes("document", "audio/mpeg", bytes("\u00ff\u00fb\u0090"))).toBe(true)
  })

  it("refuses a document declared as another image type than its bytes' signature", () => {
    // a PNG declared image/gif was stored as an image/gif document
    expect(acceptsBytes("document", "image/gif", PNG)).toBe(false)
    expect(acceptsBytes("document", "image/png", GIF)).toBe(false)
    expect(acceptsBytes("document", "image/gif", JPEG)).toBe(false)
    expect(acceptsBytes("document", "image/svg+xml", PNG)).toBe(false)
    expect(acceptsBytes("document", "image/gif", EXE)).toBe(false)
    // its own type, or another name of it, agrees; audio and video containers take their family
    expect(acceptsBytes("document", "image/gif", GIF)).toBe(true)
    expect(acceptsBytes("document", "image/apng", PNG)).toBe(true)
    expect(acceptsBytes("document", "image/jpg", JPEG)).toBe(true)
    expect(acceptsBytes("document", "video/quicktime", MP4)).toBe(true)
    expect(acceptsBytes("document", "audio/x-m4a", MP4)).toBe(true)
  })
})

describe("kindOfType", () => {
  it("stores a type as the first kind that takes it, anything else as a document", () => {
    expect(kindOfType(essence("Image/JPEG; q=1"))).toBe("image")
    expect(kindOfType("image/webp")).toBe("image")
    expect(kindOfType("video/3gpp")).toBe("video")
    expect(kindOfType("audio/ogg")).toBe("audio")
    expect(kindOfType("application/pdf")).toBe("document")
  })
})

describe("checkFile", () => {
  const HEIC = bytes([0, 0, 0, 0x18], "ftypheic", [0, 0, 0, 0])
  const MULTIPART = bytes("--X-BOUNDARY\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n")
  const UTF16 = bytes([0xff, 0xfe], "h\0i\0")

  it("keeps a declared type's parameters and normalises its case and spaces", () => {
    expect(checkFile({ kind: undefined, declared: " AUDIO/OGG ;codecs=opus ", head: OGG })).toEqual({
      _tag: "accepted",
      file: { kind: "audio", mimeType: "audio/ogg; codecs=opus" }
    })
  })

  it("refuses an empty file and a declared text that is not type/subtype", () => {
    expect(checkFile({ kind: undefined, declared: "image/png", head: new Uint8Array(0) }))
      .toEqual({ _tag: "refused", refusal: { _tag: "empty" } })
    for (const declared of ["*/*", "image/", "imÃ¤ge/png", "image/png\r\nX: 1", "IMAGE/PNG\r\n", "image/png; x"]) {
      expect(checkFile({ kind: "document", declared, head: EXE })).toMatchObject({ refusal: { _tag: "type_invalid" } })
    }
  })

  it("refuses PNG bytes declared as JPEG, naming what the bytes are", () => {
    expect(checkFile({ kind: undefined, declared: "image/jpeg", head: PNG })).toEqual({
      _tag: "refused",
      refusal: {
        _tag: "type_unsupported",
        kind: "image",
        expected: ["image/jpeg", "image/png", "image/webp"],
        sniffed: "image/png"
      }
    })
  })

  it("refuses a document whose bytes have a signature of another family, or multipart framing", () => {
    expect(checkFile({ kind: undefined, declared: "application/json", head: PNG })).toMatchObject({
      refusal: { _tag: "type_unsupported", kind: "document", expected: null, sniffed: "image/png" }
    })
    expect(checkFile({ kind: undefined, declared: "text/plain", head: MULTIPART })).toMatchObject({
      refusal: { _tag: "type_unsupported", sniffed: "multipart/form-data" }
    })
    expect(checkFile({ kind: undefined, declared: undefined, head: MULTIPART })._tag).toBe("refused")
  })

  it("takes documents whose bytes agree with their family or have no signature we know", () => {
    for (
      const [declared, head] of [
        ["video/quicktime", MP4],
        ["application/ogg", OGG],
        ["image/heic", HEIC],
        ["text/plain; charset=utf-16", UTF16],
        ["application/pdf", bytes("%PDF-1.7")],
        ["image/png", PNG]
      ] as const
    ) {
      expect(checkFile({ kind: "document", declared, head })._tag, declared).toBe("accepted")
    }
  })

  it("reads the type from the bytes when none is declared", () => {
    expect(checkFile({ kind: undefined, declared: "application/octet-stream", head: PNG })).toEqual({
      _tag: "accepted",
      file: { kind: "image", mimeType: "image/png" }
    })
    expect(checkFile({ kind: "audio", declared: undefined, head: MP4 })).toEqual({
      _tag: "accepted",
      file: { kind: "audio", mimeType: "audio/mp4" }
    })
    expect(checkFile({ kind: undefined, declared: undefined, head: EXE })).toEqual({
      _tag: "accepted",
      file: { kind: "document", mimeType: "application/octet-stream" }
    })
  })

  it("reads an Ogg file's codec from its first page: added to its type, refused when declared otherwise", () => {
    /** The first Ogg page of a file whose first packet starts with `packet`. */
    const oggWith = (packet: string) => {
      const page = new Uint8Array(28 + 40)
      page.set([..."OggS"].map((c) => c.charCodeAt(0)), 0)
      page[26] = 1
      page[27] = 40
      page.set([...packet].map((c) => c.charCodeAt(0)), 28)
      return page
    }
    const OPUS = oggWith("OpusHead")
    const VORBIS = oggWith("\x01vorbis")
    expect([oggCodec(OPUS), oggCodec(VORBIS), oggCodec(OGG)]).toEqual(["opus", "vorbis", undefined])
    expect(checkFile({ kind: undefined, declared: "audio/ogg", head: VORBIS })).toEqual({
      _tag: "accepted",
      file: { kind: "audio", mimeType: "audio/ogg; codecs=vorbis" }
    })
    expect(checkFile({ kind: "audio", declared: undefined, head: OPUS })).toEqual({
      _tag: "accepted",
      file: { kind: "audio", mimeType: "audio/ogg; codecs=opus" }
    })
    expect(checkFile({ kind: undefined, declared: "audio/ogg; codecs=opus", head: VORBIS })).toMatchObject({
      _tag: "refused",
      refusal: { _tag: "type_unsupported" }
    })
    // bytes whose codec we cannot read keep the type as declared
    expect(checkFile({ kind: undefined, declared: "audio/ogg", head: OGG })).toEqual({
      _tag: "accepted",
      file: { kind: "audio", mimeType: "audio/ogg" }
    })
  })

  it("trims only spaces and tabs around a client's type; a provider's is read leniently", () => {
    expect(checkFile({ kind: undefined, declared: " audio/ogg\t", head: OGG })._tag).toBe("accepted")
    for (
      const declared of ["\u00a0audio/ogg", "\ufeffaudio/ogg", "audio/ogg\u2028", "\u000baudio/ogg", "audio/ogg\r\n"]
    ) {
      expect(checkFile({ kind: undefined, declared, head: OGG }), JSON.stringify(declared)).toMatchObject({
        refusal: { _tag: "type_invalid" }
      })
      expect(checkFile({ kind: undefined, declared, head: OGG, lenient: true })._tag).toBe("accepted")
    }
  })
})
