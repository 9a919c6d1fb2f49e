/**
 * The console's thread with every kind (docs/CONSOLE.md "Messages and media") in a real Chromium
 * against the whole app: an image inline, an audio player, a document downloaded with its name,
 * a location with its map link, a reaction on the message it reacts to, a reply with its quote,
 * a file still arriving and one that failed; then an image and a document sent from the
 * conversation (uploaded, then sent by media id, with a caption) and an upload refused in the page.
 * The sandbox delivers the inbound kinds, so no WhatsApp is needed.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import type { SandboxInbound } from "@switchboard/domain"
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { deflateSync } from "node:zlib"
import * as Browser from "./support/Browser.js"
import { api, eventually, sandboxSetup } from "./support/Fixtures.js"
import * as TestApp from "./support/TestApp.js"

const ME = "+4915112345678"
const { patientPage: newPage, signIn, step } = Browser

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
const crc32 = (bytes: Buffer) => {
  let c = 0xffffffff
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
const chunk = (type: string, data: Buffer) => {
  const head = Buffer.alloc(4)
  head.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, "ascii"), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([head, body, crc])
}
/** A real `size`×`size` PNG of one colour (so the browser can draw it: its natural width is checked). */
const png = (size: number, rgb: [number, number, number]) => {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(size, 0)
  header.writeUInt32BE(size, 4)
  header.set([8, 2, 0, 0, 0], 8)
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: size }, () => rgb).flat())])
  const pixels = deflateSync(Buffer.concat(Array.from({ length: size }, () => row)))
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", pixels),
    chunk("IEND", Buffer.alloc(0))
  ])
}
/** CRC-32 of an Ogg page: polynomial 0x04c11db7, not reflected, starting at 0. */
const OGG_CRC = Array.from({ length: 256 }, (_, i) => {
  let r = i << 24
  for (let k = 0; k < 8; k++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1
  return r >>> 0
})
const oggPage = (packets: ReadonlyArray<Buffer>, flags: number, granule: bigint, sequence: number) => {
  const lacing = packets.flatMap((p) => [...Array<number>(Math.floor(p.length / 255)).fill(255), p.length % 255])
  const header = Buffer.alloc(27 + lacing.length)
  header.write("OggS", 0)
  header[5] = flags
  header.writeBigInt64LE(granule, 6)
  header.writeUInt32LE(1, 14)
  header.writeUInt32LE(sequence, 18)
  header[26] = lacing.length
  header.set(lacing, 27)
  const page = Buffer.concat([header, ...packets])
  let crc = 0
  for (const byte of page) crc = ((crc << 8) ^ OGG_CRC[((crc >>> 24) ^ byte) & 0xff]!) >>> 0
  page.writeUInt32LE(crc, 22)
  return page
}
/** 1.2 s of silent Ogg Opus (a voice note's type): OpusHead, OpusTags, 60 frames of 20 ms of silence. */
const opus = () => {
  const head = Buffer.alloc(19)
  head.write("OpusHead", 0)
  head.set([1, 1], 8)
  head.writeUInt16LE(312, 10)
  head.writeUInt32LE(48000, 12)
  const tags = Buffer.alloc(16)
  tags.write("OpusTags", 0)
  const frames = Array.from({ length: 60 }, () => Buffer.from([0xf8, 0xff, 0xfe]))
  return Buffer.concat([
    oggPage([head], 0x02, 0n, 0),
    oggPage([tags], 0, 0n, 1),
    oggPage(frames, 0x04, BigInt(312 + 60 * 960), 2)
  ])
}
const PDF = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")

/** The page's document (read inside the page), typed for the few reads these checks make (the test has no DOM types). */
interface Doc {
  querySelector(selector: string): { naturalWidth?: number; readyState?: number; duration?: number } | null
}

/** Same origin (the page's blob: URLs of media included), no CSP violation, no script error. */
const assertClean = (w: Browser.Watched, base: string, allowed: RegExp = /^$/) =>
  Effect.sync(() => {
    for (const url of w.requests) {
      assert.isTrue(url.startsWith(`${base}/`) || url.startsWith(`blob:${base}/`), `request outside the origin: ${url}`)
    }
    assert.deepStrictEqual(w.violations, [])
    assert.deepStrictEqual(
      w.consoleErrors.filter((e) => !allowed.test(e)),
      []
    )
  })

describe("console: media in the thread", () => {
  layer(Layer.merge(TestApp.layer(), Browser.layer), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped(
      "shows every kind in the thread and sends an image and a document from it",
      () =>
        Effect.gen(function*() {
          const base = yield* Browser.origin
          const sql = yield* SqlClient.SqlClient
          const { key, session, user } = yield* sandboxSetup([ME])
          const client = yield* api(key)
          const inbound = (body: Omit<SandboxInbound.SandboxInboundRequest, "from">) =>
            Effect.tap(
              client.sandbox.inbound({
                path: { sessionId: session.id },
                payload: { from: ME, ...body },
                withResponse: true
              }),
              ([, response]) => Effect.sync(() => assert.strictEqual(response.status, 202))
            )
          const newest = client.messages.list({ urlParams: { limit: 50 } })
          /** The newest inbound message of `type` once `n` of that type were recorded (and their media stored). */
          const recorded = (type: string, n = 1) =>
            Effect.map(
              eventually(
                newest,
                (page) =>
                  page.data.filter((m) => m.type === type && (m.media === null || m.media.status === "ready"))
                    .length >= n
              ),
              (page) => page.data.find((m) => m.type === type)!
            )
          const image = png(120, [0x12, 0x80, 0x3b])
          yield* inbound({ text: { body: "Hello, this is our menu" } })
          yield* inbound({
            image: { data_base64: image.toString("base64"), mime_type: "image/png", caption: "The lunch menu" }
          })
          const photo = yield* recorded("image")
          // a voice note is Ogg Opus (an MP3 with voice: true is refused, docs/API.md "Media")
          yield* inbound({
            audio: { data_base64: opus().toString("base64"), mime_type: "audio/ogg; codecs=opus", voice: true }
          })
          yield* inbound({
            document: { data_base64: PDF.toString("base64"), mime_type: "application/pdf", filename: "menu.pdf" }
          })
          yield* inbound({
            location: { latitude: 52.52, longitude: 13.405, name: "Office", address: "Alexanderplatz 1" }
          })
          yield* inbound({ reaction: { message_id: photo.id, emoji: "👍" } })
          yield* inbound({ reply_to: photo.id, text: { body: "Is this still valid?" } })
          yield* recorded("audio")
          yield* recorded("document")
          // two more files, one still arriving and one whose download failed (the states a slow or
          // broken provider leaves; set in the database as the media worker would)
          yield* inbound({ image: { data_base64: image.toString("base64"), mime_type: "image/png" } })
          yield* inbound({
            sticker: { data_base64: Buffer.from("RIFF\0\0\0\0WEBPVP8 ").toString("base64"), mime_type: "image/webp" }
          })
          const pending = yield* recorded("image", 2)
          const failed = yield* recorded("sticker")
          yield* sql`UPDATE messages SET media_status = 'pending' WHERE id = ${pending.id}`
          yield* sql`UPDATE messages SET media_status = 'failed', media_failure = 'The download timed out'
            WHERE id = ${failed.id}`
          yield* recorded("location")
          yield* recorded("reaction")

          const w = yield* newPage()
          yield* signIn(w, base, user)
          yield* step(() => w.page.locator("nav").getByRole("button", { name: "Inbox" }).click())
          const thread = w.page.locator("#thread-messages")
          yield* step(async () => {
            await w.page.locator("li[data-conversation]").first().getByRole("button").click()
            await thread.getByText("Is this still valid?").waitFor()
          })

          // the image, drawn (the blob URL holds the real PNG), with its caption and the reaction on it
          const photoItem = thread.locator(`li[data-message="${photo.id}"]`)
          yield* step(() =>
            w.page.waitForFunction(
              (id) =>
                (globalThis as unknown as { document: Doc }).document.querySelector(
                  `li[data-message="${id}"] img.media`
                )?.naturalWidth === 120,
              photo.id
            )
          )
          assert.match((yield* step(() => photoItem.locator("img").getAttribute("src"))) ?? "", /^blob:/)
          assert.strictEqual(yield* step(() => photoItem.locator("img").getAttribute("alt")), "The lunch menu")
          assert.include(yield* step(() => photoItem.innerText()), "The lunch menu")
          assert.strictEqual(yield* step(() => photoItem.locator(".reaction").innerText()), "👍 They")
          assert.strictEqual(yield* step(() => thread.locator("li[data-type=reaction]").count()), 0)

          // the reply quotes it
          const reply = thread.locator("li", { hasText: "Is this still valid?" })
          assert.strictEqual(yield* step(() => reply.locator("blockquote.quote").innerText()), "The lunch menu")

          // the voice note plays: a player whose blob the browser decoded
          const audio = thread.locator("li[data-type=audio] audio")
          yield* step(() =>
            w.page.waitForFunction(() => {
              const a = (globalThis as unknown as { document: Doc }).document.querySelector("li[data-type=audio] audio")
              return a !== null && (a.readyState ?? 0) >= 1 && (a.duration ?? 0) > 0.5
            })
          )
          assert.strictEqual(yield* step(() => audio.getAttribute("aria-label")), "Voice note")
          assert.isNotNull(yield* step(() => audio.getAttribute("controls")))

          // the document: its name and size, downloaded with the user's token (no token in a URL)
          const link = thread.locator("li[data-type=document] a.download")
          assert.strictEqual(yield* step(() => link.innerText()), `menu.pdf (${PDF.length} B)`)
          const download = yield* step(async () => {
            const [d] = await Promise.all([w.page.waitForEvent("download"), link.click()])
            return d
          })
          assert.strictEqual(download.suggestedFilename(), "menu.pdf")
          const saved = yield* step(() => download.path())
          assert.isTrue(readFileSync(saved).equals(PDF), "the downloaded bytes are the document's")

          // the location: name, address, coordinates and a map link
          const place = thread.locator("li[data-type=location]")
          const placeText = yield* step(() => place.innerText())
          assert.include(placeText, "Office")
          assert.include(placeText, "Alexanderplatz 1")
          assert.include(placeText, "52.52, 13.405")
          assert.include(
            (yield* step(() => place.getByRole("link", { name: "Open in map" }).getAttribute("href"))) ?? "",
            "mlat=52.52&mlon=13.405"
          )

          // a file still arriving, and one that could not be stored, say so
          assert.include(
            yield* step(() => thread.locator(`li[data-message="${pending.id}"]`).innerText()),
            "Image arriving…"
          )
          assert.include(
            yield* step(() => thread.locator(`li[data-message="${failed.id}"]`).innerText()),
            "Sticker could not be stored: The download timed out"
          )
          for (const token of w.tokens) assert.notInclude(w.requests.join(" "), token)
          yield* Browser.screenshot(w.page, "thread-media")

          // send an image with a caption, then a document, from the conversation
          yield* step(async () => {
            await w.page.getByLabel("Send a file").setInputFiles({
              name: "offer.png",
              mimeType: "image/png",
              buffer: png(24, [0xe0, 0x7b, 0x00])
            })
            await w.page.getByLabel("Caption").fill("Today's offer")
            await w.page.getByRole("button", { name: "Send file" }).click()
            await w.page.locator("#attach-status").getByText("Sent offer.png.").waitFor()
            await thread.locator("li.out[data-type=image]", { hasText: "Today's offer" }).waitFor()
            await w.page.getByLabel("Send a file").setInputFiles({
              name: "terms.pdf",
              mimeType: "application/pdf",
              buffer: PDF
            })
            await w.page.getByLabel("Caption").fill("Our terms")
            await w.page.getByRole("button", { name: "Send file" }).click()
            await thread.locator("li.out[data-type=document]", { hasText: "terms.pdf" }).waitFor()
          })
          const sent = yield* eventually(
            newest,
            (page) => page.data.filter((m) => m.direction === "outbound").length === 2
          )
          const [doc, img] = sent.data.filter((m) => m.direction === "outbound")
          assert.strictEqual(img?.type, "image")
          assert.strictEqual(img?.image?.caption, "Today's offer")
          assert.strictEqual(doc?.type, "document")
          assert.strictEqual(doc?.document?.filename, "terms.pdf")
          assert.strictEqual(doc?.document?.caption, "Our terms")
          yield* step(() =>
            w.page.waitForFunction(() =>
              (globalThis as unknown as { document: Doc }).document.querySelector("li.out[data-type=image] img.media")
                ?.naturalWidth === 24
            )
          )

          // a file that is not what it says: the upload's refusal, in the page
          yield* step(async () => {
            await w.page.getByLabel("Send a file").setInputFiles({
              name: "fake.png",
              mimeType: "image/png",
              buffer: Buffer.from("this is not a picture")
            })
            await w.page.getByRole("button", { name: "Send file" }).click()
            await w.page.locator("#attach-error").waitFor()
          })
          const refusal = yield* step(() => w.page.locator("#attach-error").innerText())
          assert.match(
            refusal,
            /takes image\/jpeg, image\/png, image\/webp, and the bytes must be of the declared type/
          )
          yield* Browser.screenshot(w.page, "thread-send-file")
          yield* assertClean(w, base, /^422 .*\/v1\/media\?filename=fake\.png$/)
        }),
      200_000
    )
  })
})
