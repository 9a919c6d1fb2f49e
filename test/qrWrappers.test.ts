/**
 * Every wrapper WhatsApp puts around a message is opened (docs/QR-CHANNELS.md "Wrappers"), through
 * the real Baileys client against the fake WhatsApp server. The list comes from the proto Baileys
 * ships (every `FutureProofMessage` member of `Message`), not from our code: a Baileys upgrade that
 * adds a wrapper nobody handled fails here. A kind that points at another message is linked to it.
 */
import { assert, describe, layer } from "@effect/vitest"
import type { Messaging } from "@switchboard/domain"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { api, eventually, type SignedUp } from "./support/Fixtures.js"
import * as QrApp from "./support/QrApp.js"
import { appWith, pairedChannel, Wa } from "./support/QrApp.js"

/** Every `FutureProofMessage` member of `Message` in the proto Baileys ships. */
const protoWrappers = (): Array<string> => {
  const text = readFileSync(createRequire(import.meta.url).resolve("baileys/WAProto/WAProto.proto"), "utf8")
  const start = text.indexOf("\nmessage Message {")
  return [...text.slice(start, text.indexOf("\n}", start)).matchAll(/^ {4}optional FutureProofMessage (\w+) = \d+;$/gm)]
    .map((m) => m[1]!)
}

/** The channel's inbound messages once `done` holds, within 30 s. */
const inboundUntil = (
  user: SignedUp,
  channelId: `ch_${string}`,
  done: (messages: ReadonlyArray<Messaging.Message>) => boolean
) => QrApp.inboundUntil(user, channelId, done, 30_000)

describe("QR wrappers", () => {
  layer(appWith({ phoneNumber: "+15550005151" }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.scoped("opens every wrapper of the proto Baileys ships to the text inside it", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Wrappers")
        const contact = wa.contact("+4915112349020")
        const wrappers = protoWrappers()
        assert.isAbove(wrappers.length, 20)
        for (const wrapper of wrappers) {
          yield* contact.sends({ [wrapper]: { message: { conversation: `inside ${wrapper}` } } })
        }
        const recorded = yield* inboundUntil(user, channelId, (data) => data.length >= wrappers.length)
        const shown = new Map(recorded.map((m) => [m.text.body, m.type]))
        const unopened = wrappers.filter((w) => shown.get(`inside ${w}`) !== "text")
        assert.deepStrictEqual(unopened, [], JSON.stringify(recorded.map((m) => [m.type, m.text.body, m.unsupported])))
        assert.strictEqual(recorded.length, wrappers.length)
      }), 150_000)

    it.scoped("a kind that points at another message is linked to it, never an empty unlinked message", () =>
      Effect.gen(function*() {
        const wa = yield* Wa
        const { channelId, user } = yield* pairedChannel("Pins")
        const contact = wa.contact("+4915112349021")
        const original = yield* contact.says("pin this")
        // the pin after the message is recorded: a pin that overtakes the message it points at (at
        // the load of a full run, once) is recorded unlinked, which is not what this test is about
        yield* inboundUntil(user, channelId, (data) => data.length >= 1)
        yield* contact.sends({ pinInChatMessage: { key: { id: original, remoteJid: "x@s.whatsapp.net" }, type: 1 } })
        const recorded = yield* inboundUntil(user, channelId, (data) => data.length >= 2)
        const first = recorded.find((m) => m.type === "text")!
        const pin = recorded.find((m) => m.type === "unsupported")!
        assert.deepStrictEqual(pin.unsupported, { kind: "pinInChatMessage" })
        assert.deepStrictEqual(pin.context, { reply_to: first.id }, JSON.stringify(pin))
      }))
  })
})
