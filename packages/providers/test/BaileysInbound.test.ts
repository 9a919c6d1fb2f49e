import { assert, describe, it } from "@effect/vitest"
import { BaileysInbound, BaileysWrappers } from "@switchboard/providers/qr"
import { proto, type WAMessage } from "baileys"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"

const NOW = 1_790_000_000_000
const PHONE = "15551234567@s.whatsapp.net"
const LID = "123456789012345@lid"

const msg = (message: proto.IMessage, key: Partial<WAMessage["key"]> = {}): WAMessage => ({
  key: { id: "WAID1", remoteJid: PHONE, fromMe: false, ...key },
  message,
  messageTimestamp: 1_790_000_100
})

const translate = (message: WAMessage) => {
  const t = BaileysInbound.fromBaileys(message, NOW)
  if (t._tag !== "content") assert.fail(`ignored: ${t.reason}`)
  return t
}

const ignoredReason = (message: WAMessage) => {
  const t = BaileysInbound.fromBaileys(message, NOW)
  return t._tag === "ignored" ? t.reason : "recorded"
}

const mediaKey = new Uint8Array(32).fill(7)
const fileSha256 = new Uint8Array(32).fill(0xab)

describe("fromBaileys: kinds", () => {
  it("records a plain text with its sender and WhatsApp's timestamp", () => {
    const t = translate(msg({ conversation: "hello" }))
    assert.deepStrictEqual(t.content, {
      providerMessageId: "WAID1",
      sender: { phoneNumber: "+15551234567", whatsappLid: null },
      body: { _tag: "text", body: "hello" },
      quotedProviderMessageId: null,
      at: 1_790_000_100_000
    })
  })

  it("records an extended text and the message it quotes", () => {
    const t = translate(msg({
      extendedTextMessage: {
        text: "yes, that one",
        contextInfo: { stanzaId: "QUOTED1", quotedMessage: { conversation: "a" } }
      }
    }))
    assert.deepStrictEqual(t.content.body, { _tag: "text", body: "yes, that one" })
    assert.strictEqual(t.content.quotedProviderMessageId, "QUOTED1")
  })

  it("unwraps disappearing-mode and view-once wrappers", () => {
    const t = translate(msg({ ephemeralMessage: { message: { extendedTextMessage: { text: "vanishing" } } } }))
    assert.deepStrictEqual(t.content.body, { _tag: "text", body: "vanishing" })
    const once = translate(msg({
      viewOnceMessageV2: { message: { imageMessage: { mimetype: "image/jpeg", mediaKey, url: "https://h/x" } } }
    }))
    assert.strictEqual(once.content.body._tag === "media" && once.content.body.kind, "image")
  })

  it("records an image with its caption, size, hash and a JSON download handle", () => {
    const t = translate(msg({
      imageMessage: {
        mimetype: "image/png",
        caption: "look",
        fileLength: 2048,
        fileSha256,
        mediaKey,
        url: "https://127.0.0.1:9/v/t62/abc?x=1",
        directPath: "/v/t62/abc",
        contextInfo: { stanzaId: "Q2" }
      }
    }))
    const body = t.content.body
    if (body._tag !== "media") return assert.fail(body._tag)
    assert.strictEqual(body.kind, "image")
    assert.strictEqual(body.mimeType, "image/png")
    assert.strictEqual(body.caption, "look")
    assert.strictEqual(body.sizeBytes, 2048)
    assert.strictEqual(body.sha256, "ab".repeat(32))
    assert.strictEqual(body.voice, false)
    assert.strictEqual(t.content.quotedProviderMessageId, "Q2")
    const source = body.source as BaileysInbound.BaileysMediaSource
    // it survives JSON (stored with the durable download job) and decodes back to the same media
    const back = JSON.parse(JSON.stringify(source)) as BaileysInbound.BaileysMediaSource
    assert.deepStrictEqual(back.key, { id: "WAID1", remoteJid: PHONE, fromMe: false, participant: null })
    const decoded = proto.Message.fromObject(back.message)
    assert.deepStrictEqual(Buffer.from(decoded.imageMessage!.mediaKey!), Buffer.from(mediaKey))
    assert.strictEqual(decoded.imageMessage!.directPath, "/v/t62/abc")
  })

  it("keeps a file whose announced type a client's door would refuse, read leniently and marked for the log", () => {
    const odd = translate(msg({ audioMessage: { mimetype: "audio/ogg; codecs=opus\r\nX: 1", ptt: true, mediaKey } }))
    assert.strictEqual(odd.content.body._tag === "media" && odd.content.body.mimeType, "audio/ogg")
    assert.strictEqual(odd.oddMediaType, true)
    const none = translate(msg({ audioMessage: { mimetype: "not a type", mediaKey } }))
    assert.strictEqual(none.content.body._tag === "media" && none.content.body.mimeType, "audio/ogg")
    assert.strictEqual(none.oddMediaType, true)
    const plain = translate(msg({ audioMessage: { mimetype: "audio/ogg; codecs=opus", ptt: true, mediaKey } }))
    assert.strictEqual(plain.oddMediaType, undefined)
  })

  it("records a voice note as audio with voice = true, and a plain audio with voice = false", () => {
    const voice = translate(msg({ audioMessage: { mimetype: "audio/ogg; codecs=opus", ptt: true, mediaKey } }))
    assert.strictEqual(voice.content.body._tag === "media" && voice.content.body.voice, true)
    const audio = translate(msg({ audioMessage: { mimetype: "audio/mpeg", mediaKey } }))
    assert.strictEqual(audio.content.body._tag === "media" && audio.content.body.voice, false)
  })

  it("records documents (also with a caption wrapper), videos and stickers", () => {
    const doc = translate(msg({
      documentWithCaptionMessage: {
        message: {
          documentMessage: { mimetype: "application/pdf", fileName: "a.pdf", caption: "the invoice", mediaKey }
        }
      }
    }))
    const body = doc.content.body
    if (body._tag !== "media") return assert.fail(body._tag)
    assert.deepStrictEqual([body.kind, body.filename, body.caption], ["document", "a.pdf", "the invoice"])
    const video = translate(msg({ videoMessage: { mimetype: "video/mp4", mediaKey } }))
    assert.strictEqual(video.content.body._tag === "media" && video.content.body.kind, "video")
    const sticker = translate(msg({ stickerMessage: { mimetype: "image/webp", mediaKey } }))
    assert.strictEqual(sticker.content.body._tag === "media" && sticker.content.body.kind, "sticker")
    assert.strictEqual(sticker.content.body._tag === "media" && sticker.content.body.caption, null)
  })

  it("records locations and live locations", () => {
    const t = translate(msg({
      locationMessage: { degreesLatitude: 52.52, degreesLongitude: 13.405, name: "Office", address: "Main St 1" }
    }))
    assert.deepStrictEqual(t.content.body, {
      _tag: "location",
      latitude: 52.52,
      longitude: 13.405,
      name: "Office",
      address: "Main St 1"
    })
    const live = translate(msg({ liveLocationMessage: { degreesLatitude: 1.5, degreesLongitude: 2.5 } }))
    assert.deepStrictEqual(live.content.body, {
      _tag: "location",
      latitude: 1.5,
      longitude: 2.5,
      name: null,
      address: null
    })
  })

  it("records contact cards with their numbers (E.164 from waid, else as given)", () => {
    const vcard = (name: string, tel: string) => `BEGIN:VCARD\nVERSION:3.0\nFN:${name}\n${tel}\nEND:VCARD`
    const one = translate(msg({
      contactMessage: { displayName: "Ann", vcard: vcard("Ann", "TEL;type=CELL;waid=4915112345678:+49 151 12345678") }
    }))
    assert.deepStrictEqual(one.content.body, {
      _tag: "contacts",
      contacts: [{ name: "Ann", phones: ["+4915112345678"] }]
    })
    const many = translate(msg({
      contactsArrayMessage: {
        contacts: [
          { displayName: "Ann", vcard: vcard("Ann", "item1.TEL;waid=4915112345678:+49 151 12345678") },
          { displayName: "Bob", vcard: vcard("Bob", "TEL;type=HOME:030 1234") }
        ]
      }
    }))
    assert.deepStrictEqual(many.content.body, {
      _tag: "contacts",
      contacts: [{ name: "Ann", phones: ["+4915112345678"] }, { name: "Bob", phones: ["030 1234"] }]
    })
  })

  it("records reactions, and a removed reaction as an empty emoji", () => {
    const t = translate(msg({ reactionMessage: { key: { id: "TARGET", remoteJid: PHONE, fromMe: true }, text: "👍" } }))
    assert.deepStrictEqual(t.content.body, { _tag: "reaction", targetProviderMessageId: "TARGET", emoji: "👍" })
    const removed = translate(msg({ reactionMessage: { key: { id: "TARGET" }, text: "" } }))
    assert.deepStrictEqual(removed.content.body, { _tag: "reaction", targetProviderMessageId: "TARGET", emoji: "" })
  })

  it("records an edit (as Baileys 7 wraps it) and a revoke as messages pointing at the original", () => {
    const Type = proto.Message.ProtocolMessage.Type
    const edit = translate(msg({
      editedMessage: {
        message: {
          protocolMessage: { type: Type.MESSAGE_EDIT, key: { id: "ORIG" }, editedMessage: { conversation: "fixed" } }
        }
      }
    }))
    assert.deepStrictEqual(edit.content.body, { _tag: "edit", targetProviderMessageId: "ORIG", body: "fixed" })
    const caption = translate(msg({
      protocolMessage: {
        type: Type.MESSAGE_EDIT,
        key: { id: "ORIG" },
        editedMessage: { imageMessage: { caption: "new caption" } }
      }
    }))
    assert.deepStrictEqual(caption.content.body, { _tag: "edit", targetProviderMessageId: "ORIG", body: "new caption" })
    const revoke = translate(msg({ protocolMessage: { type: Type.REVOKE, key: { id: "ORIG" } } }))
    assert.deepStrictEqual(revoke.content.body, { _tag: "revoke", targetProviderMessageId: "ORIG" })
  })

  it("records every other kind as unsupported with WhatsApp's name of it", () => {
    for (
      const [message, kind] of [
        [{ pollCreationMessageV3: { name: "Lunch?", options: [{ optionName: "yes" }] } }, "pollCreationMessageV3"],
        [{ eventMessage: { name: "Party" } }, "eventMessage"],
        [{ buttonsResponseMessage: { selectedButtonId: "1" } }, "buttonsResponseMessage"]
      ] as const
    ) {
      const t = translate(msg(message as proto.IMessage))
      assert.deepStrictEqual(t.content.body, { _tag: "unsupported", kind })
    }
  })
})

describe("fromBaileys: senders", () => {
  it("takes the phone number from a phone chat, and the LID from remoteJidAlt", () => {
    const t = translate(msg({ conversation: "x" }, { remoteJid: "15551234567:3@s.whatsapp.net", remoteJidAlt: LID }))
    assert.deepStrictEqual(t.content.sender, { phoneNumber: "+15551234567", whatsappLid: "123456789012345" })
  })

  it("keeps a sender known only by LID (no phone number yet)", () => {
    const t = translate(msg({ conversation: "x" }, { remoteJid: LID }))
    assert.deepStrictEqual(t.content.sender, { phoneNumber: null, whatsappLid: "123456789012345" })
  })

  it("takes the phone number of a LID chat from remoteJidAlt", () => {
    const t = translate(msg({ conversation: "x" }, { remoteJid: LID, remoteJidAlt: PHONE }))
    assert.deepStrictEqual(t.content.sender, { phoneNumber: "+15551234567", whatsappLid: "123456789012345" })
  })
})

describe("fromBaileys: ignored on purpose", () => {
  it("ignores status posts, also by a LID poster whose phone number is in remoteJidAlt", () => {
    assert.strictEqual(
      ignoredReason(msg({ conversation: "my day" }, { remoteJid: "status@broadcast", participant: PHONE })),
      "status_broadcast"
    )
    const lidStatus = BaileysInbound.fromBaileys(
      msg({ conversation: "my day" }, {
        remoteJid: "status@broadcast",
        remoteJidAlt: PHONE,
        participant: LID,
        participantAlt: PHONE
      }),
      NOW
    )
    assert.deepStrictEqual(lidStatus, {
      _tag: "ignored",
      reason: "status_broadcast",
      type: "text",
      providerMessageId: "WAID1",
      kind: "conversation",
      sender: LID
    })
  })

  it("reports a group chat's message with its group, the participant as sender and the mentions", () => {
    const content = translate(msg({
      extendedTextMessage: { text: "hi all", contextInfo: { mentionedJid: [LID, "123@g.us"] } }
    }, { remoteJid: "1203630@g.us", participant: LID, participantAlt: PHONE })).content
    assert.deepStrictEqual(content.groupChat, { whatsappGroupId: "1203630" })
    assert.deepStrictEqual(content.sender, { phoneNumber: `+${PHONE.split("@")[0]}`, whatsappLid: LID.split("@")[0] })
    assert.deepStrictEqual(content.mentions, [{ phoneNumber: null, whatsappLid: LID.split("@")[0] }])
    assert.strictEqual(translate(msg({ conversation: "direct" })).content.groupChat, undefined)
  })

  it("ignores a group's change notices (stubs without content), newsletters and our own messages", () => {
    const { GROUP_CHANGE_SUBJECT } = proto.WebMessageInfo.StubType
    assert.strictEqual(
      ignoredReason({
        key: { id: "N", remoteJid: "1203630@g.us", participant: PHONE },
        messageStubType: GROUP_CHANGE_SUBJECT,
        messageStubParameters: ["New name"]
      }),
      "group_update"
    )
    assert.strictEqual(ignoredReason(msg({ conversation: "news" }, { remoteJid: "1203@newsletter" })), "newsletter")
    assert.strictEqual(ignoredReason(msg({ conversation: "mine" }, { fromMe: true })), "own_message")
  })

  it("records a message whose content has not reached the device as unsupported of its kind", () => {
    const { CIPHERTEXT } = proto.WebMessageInfo.StubType
    const bodyOf = (message: WAMessage) => translate(message).content.body
    assert.deepStrictEqual(bodyOf({ key: { id: "V", remoteJid: PHONE, isViewOnce: true } }), {
      _tag: "unsupported",
      kind: "view_once"
    })
    assert.deepStrictEqual(
      bodyOf({
        key: { id: "P", remoteJid: PHONE },
        messageStubType: CIPHERTEXT,
        messageStubParameters: ["Message absent from node"]
      }),
      { _tag: "unsupported", kind: "placeholder" }
    )
    assert.deepStrictEqual(
      bodyOf({ key: { id: "C", remoteJid: PHONE }, messageStubType: CIPHERTEXT, messageStubParameters: ["Bad MAC"] }),
      { _tag: "unsupported", kind: "ciphertext" }
    )
  })

  it("ignores other stubs without content", () => {
    assert.strictEqual(
      ignoredReason({ key: { id: "S", remoteJid: PHONE }, messageStubType: proto.WebMessageInfo.StubType.REVOKE }),
      "no_content"
    )
  })

  it("ignores device signalling, naming its protocol type", () => {
    const t = BaileysInbound.fromBaileys(
      msg({
        protocolMessage: { type: proto.Message.ProtocolMessage.Type.EPHEMERAL_SETTING, ephemeralExpiration: 86400 }
      }),
      NOW
    )
    assert.strictEqual(t._tag === "ignored" && t.reason, "protocol")
    assert.strictEqual(t._tag === "ignored" && t.kind, "protocolMessage.EPHEMERAL_SETTING")
  })

  it("uses the time of translation when WhatsApp gave none", () => {
    const t = translate({ key: { id: "T", remoteJid: PHONE }, message: { conversation: "x" } })
    assert.strictEqual(t.content.at, NOW)
  })
})

/** Every `FutureProofMessage` member of `Message` in the proto Baileys ships (the wrappers). */
const protoWrappers = (): Array<string> => {
  const file = createRequire(import.meta.url).resolve("baileys/WAProto/WAProto.proto")
  const text = readFileSync(file, "utf8")
  const start = text.indexOf("\nmessage Message {")
  const end = text.indexOf("\n}", start)
  return [...text.slice(start, end).matchAll(/^ {4}optional FutureProofMessage (\w+) = \d+;$/gm)].map((m) => m[1]!)
}

describe("fromBaileys: wrappers", () => {
  it("lists every wrapper of the proto Baileys ships (a new one fails here until it is handled)", () => {
    const found = protoWrappers()
    assert.isAbove(found.length, 20)
    assert.sameMembers(Object.keys(BaileysWrappers.WRAPPERS), found)
  })

  it("opens each wrapper, nested too, to the text inside", () => {
    for (const wrapper of protoWrappers()) {
      const t = translate(msg({ [wrapper]: { message: { ephemeralMessage: { message: { conversation: wrapper } } } } }))
      assert.deepStrictEqual(t.content.body, { _tag: "text", body: wrapper }, wrapper)
    }
  })

  it("links a kind that points at another message, and an associated child, to that message", () => {
    const pin = translate(msg({ pinInChatMessage: { key: { id: "PINNED" }, type: 1 } }))
    assert.deepStrictEqual(pin.content.body, { _tag: "unsupported", kind: "pinInChatMessage" })
    assert.strictEqual(pin.content.quotedProviderMessageId, "PINNED")
    const child = translate(msg({
      associatedChildMessage: {
        message: {
          imageMessage: { mimetype: "image/jpeg" },
          messageContextInfo: { messageAssociation: { associationType: 1, parentMessageKey: { id: "ALBUM" } } }
        }
      }
    }))
    assert.strictEqual(child.content.body._tag, "media")
    assert.strictEqual(child.content.quotedProviderMessageId, "ALBUM")
  })
})
