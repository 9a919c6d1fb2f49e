/**
 * What a QR channel hears, through the real Baileys client and the fake WhatsApp server: every
 * kind reported as inbound content, LID senders, what is ignored on purpose, messages delivered
 * after a reconnect (`append`), and media downloaded and decrypted from the fake media host.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as TestDatabase from "@switchboard/db/testing"
import type { MessageContent } from "@switchboard/domain"
import { InboundMetrics, QrAuthStateRepo, type QrConnectionEvent } from "@switchboard/providers"
import { proto } from "baileys"
import { Chunk, Effect, Exit, Layer, Logger, LogLevel, Metric, MetricLabel, Scope, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { FakeWhatsApp } from "../fake-whatsapp/index.js"
import { connect, is, newChannelId, type Observed, pair } from "./QrHarness.js"

const TestLayer = QrAuthStateRepo.QrAuthStateRepo.Default.pipe(
  Layer.provideMerge(TestDatabase.sqlLayer),
  Layer.provideMerge(Logger.replace(Logger.defaultLogger, Logger.none))
)

const inboundWithId = (a: Observed, id: string) =>
  Effect.map(
    a.next(is("inbound", (e) => e.content.providerMessageId === id), `inbound ${id}`),
    (e: QrConnectionEvent.QrInboundEvent) => e.content
  )

const ignoredCount = (reason: string) =>
  Effect.map(
    Metric.value(Metric.taggedWithLabels(InboundMetrics.inboundMessages, [
      MetricLabel.make("type", "text"),
      MetricLabel.make("outcome", "ignored"),
      MetricLabel.make("reason", reason)
    ])),
    (state) => state.count
  )

const ignoredCounts = Effect.all({ status_broadcast: ignoredCount("status_broadcast") })

/** `effect` again until `done`, for at most 20 s; the last result. */
const waitFor = <A>(effect: Effect.Effect<A>, done: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const value = yield* effect
      if (done(value)) return value
      yield* Effect.sleep("100 millis")
    }
    return yield* effect
  })

const paired = Effect.gen(function*() {
  const wa = yield* FakeWhatsApp.scoped()
  const channelId = yield* newChannelId
  const a = yield* connect(wa, { channelId })
  yield* pair(wa, a)
  return { wa, a, channelId }
})

describe("QR inbound", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.scoped("reports quoted replies, reactions, edits, revokes, locations, contact cards and unknown kinds", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const bob = wa.contact("+447700900123")
        const Type = proto.Message.ProtocolMessage.Type

        const first = yield* bob.says("first")
        const reply = yield* bob.sends({
          extendedTextMessage: {
            text: "about that",
            contextInfo: { stanzaId: first, quotedMessage: { conversation: "first" } }
          }
        })
        const reaction = yield* bob.sends({ reactionMessage: { key: { id: first, remoteJid: "x" }, text: "❤️" } })
        const edit = yield* bob.sends({
          protocolMessage: { type: Type.MESSAGE_EDIT, key: { id: first }, editedMessage: { conversation: "first!" } }
        })
        const revoke = yield* bob.sends({ protocolMessage: { type: Type.REVOKE, key: { id: first } } })
        const wrapped = yield* bob.sends({
          ephemeralMessage: { message: { extendedTextMessage: { text: "vanishing" } } }
        })
        const location = yield* bob.sends({ locationMessage: { degreesLatitude: 51.5, degreesLongitude: -0.12 } })
        const card = yield* bob.sends({
          contactMessage: { displayName: "Ann", vcard: "BEGIN:VCARD\nTEL;waid=4915112345678:+49 151\nEND:VCARD" }
        })
        const poll = yield* bob.sends({ pollCreationMessageV3: { name: "Lunch?", options: [{ optionName: "yes" }] } })

        const body = (id: string) => Effect.map(inboundWithId(a, id), (c: MessageContent.InboundContent) => c)
        const replied = yield* body(reply)
        assert.strictEqual(replied.quotedProviderMessageId, first)
        assert.deepStrictEqual(replied.body, { _tag: "text", body: "about that" })
        assert.deepStrictEqual((yield* body(reaction)).body, {
          _tag: "reaction",
          targetProviderMessageId: first,
          emoji: "❤️"
        })
        assert.deepStrictEqual((yield* body(edit)).body, {
          _tag: "edit",
          targetProviderMessageId: first,
          body: "first!"
        })
        assert.deepStrictEqual((yield* body(revoke)).body, { _tag: "revoke", targetProviderMessageId: first })
        assert.deepStrictEqual((yield* body(wrapped)).body, { _tag: "text", body: "vanishing" })
        assert.deepStrictEqual((yield* body(location)).body, {
          _tag: "location",
          latitude: 51.5,
          longitude: -0.12,
          name: null,
          address: null
        })
        assert.deepStrictEqual((yield* body(card)).body, {
          _tag: "contacts",
          contacts: [{ name: "Ann", phones: ["+4915112345678"] }]
        })
        assert.deepStrictEqual((yield* body(poll)).body, { _tag: "unsupported", kind: "pollCreationMessageV3" })
      }))

    it.scoped("keeps senders WhatsApp names by LID, with and without their phone number, and reports the mapping", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const hidden = wa.contact("+447700900201")
        const revealed = wa.contact("+447700900202")

        const lidOnly = yield* inboundWithId(a, yield* hidden.says("who am I", { addressing: "lid" }))
        assert.deepStrictEqual(lidOnly.sender, { phoneNumber: null, whatsappLid: hidden.lidUser })

        const both = yield* inboundWithId(a, yield* revealed.says("it's me", { addressing: "lid+pn" }))
        assert.deepStrictEqual(both.sender, { phoneNumber: revealed.number, whatsappLid: revealed.lidUser })
        // reported before the message that revealed it
        const mappings = a.seen.filter(is("lid_mapping"))
        assert.deepStrictEqual(mappings.map((m) => [m.whatsappLid, m.phoneNumber]), [[
          revealed.lidUser,
          revealed.number
        ]])
      }))

    it.scoped("reports the phone number WhatsApp reveals for a LID (lid-mapping.update)", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const ivy = wa.contact("+447700900203")
        yield* inboundWithId(a, yield* ivy.says("hidden", { addressing: "lid" }))
        yield* ivy.revealsNumber()
        const mapping = yield* a.next(is("lid_mapping"), "lid mapping")
        assert.deepStrictEqual([mapping.whatsappLid, mapping.phoneNumber], [ivy.lidUser, ivy.number])
      }))

    it.scoped("does not report status posts, also not a LID poster's status with a phone number; group messages carry their group", () =>
      Effect.gen(function*() {
        const { a, wa } = yield* paired
        const carol = wa.contact("+447700900301")
        const dave = wa.contact("+447700900302")

        const before = yield* ignoredCounts
        const inGroup = yield* carol.says("hello group", { chat: "group" })
        yield* carol.says("my pn status", { chat: "status" })
        yield* dave.says("my lid status", { chat: "status", addressing: "lid+pn" })
        // counted by reason once handled (docs/OPERATING.md "Metrics"); Baileys decrypts senders in parallel
        const counted = yield* waitFor(
          Effect.map(ignoredCounts, (now) => ({ status_broadcast: now.status_broadcast - before.status_broadcast })),
          (c) => c.status_broadcast >= 2
        )
        assert.deepStrictEqual(counted, { status_broadcast: 2 })
        const marker = yield* carol.says("direct")
        yield* inboundWithId(a, marker)
        const inbound = a.seen.filter(is("inbound"))
        assert.deepStrictEqual(
          inbound.map((e) => [e.content.providerMessageId, e.content.groupChat ?? null]),
          [[inGroup, { whatsappGroupId: "120363025246125486" }], [marker, null]]
        )
      }))

    it.scoped("logs what it ignores with the WhatsApp id, kind and sender, never the text", () => {
      const lines: Array<string> = []
      const capture = Logger.add(Logger.map(Logger.logfmtLogger, (line) => {
        lines.push(line)
      }))
      return Effect.gen(function*() {
        const { a, wa } = yield* paired
        const kim = wa.contact("+447700900304")
        const id = yield* kim.says("secret status words", { chat: "status" })
        const marker = yield* kim.says("direct")
        yield* inboundWithId(a, marker)
        const line = yield* waitFor(
          Effect.sync(() => lines.find((l) => l.includes("qr inbound message ignored") && l.includes(id))),
          (l) => l !== undefined
        )
        assert.isDefined(line)
        assert.include(line, "reason=status_broadcast")
        assert.include(line, "kind=conversation")
        assert.include(line, `sender=${kim.user}@s.whatsapp.net`)
        for (const l of lines) assert.notInclude(l, "secret status words")
      }).pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.Debug))
    })

    it.scoped("reports texts sent while the link was down once it is back (offline delivery), each once", () =>
      Effect.gen(function*() {
        const wa = yield* FakeWhatsApp.scoped()
        const channelId = yield* newChannelId
        const first = yield* Scope.make()
        const a = yield* connect(wa, { channelId }).pipe(Scope.extend(first))
        yield* pair(wa, a)
        yield* Scope.close(first, Exit.void)
        yield* wa.until(() => wa.openConnections === 0)

        const erin = wa.contact("+447700900401")
        const ids = [yield* erin.says("while you were away 1"), yield* erin.says("while you were away 2")]
        assert.strictEqual(wa.heldOffline, 2)

        // a new owner (runner restart, failover) resumes the link: the backlog comes as `append`
        const b = yield* connect(wa, { channelId })
        assert.isTrue(yield* b.connection.resume)
        for (const id of ids) yield* inboundWithId(b, id)
        const live = yield* erin.says("and now live")
        yield* inboundWithId(b, live)
        const reported = b.seen.filter(is("inbound")).map((e) => e.content.providerMessageId)
        assert.deepStrictEqual(reported, [...ids, live])
      }))

    it.scoped("downloads an inbound image from the media host, decrypted and byte-identical", () =>
      Effect.gen(function*() {
        const { a, channelId, wa } = yield* paired
        const frank = wa.contact("+447700900501")
        const bytes = randomBytes(300_000)
        const { id } = yield* frank.sendsMedia("image", bytes, { mimetype: "image/png", caption: "a chart" })
        const content = yield* inboundWithId(a, id)
        const body = content.body
        if (body._tag !== "media") return assert.fail(body._tag)
        assert.deepStrictEqual([body.kind, body.mimeType, body.caption], ["image", "image/png", "a chart"])
        assert.strictEqual(body.sizeBytes, bytes.length)

        const provider = a.provider
        // the handle survives JSON, as the durable download job stores it
        const source = JSON.parse(JSON.stringify(body.source))
        const downloaded = yield* Stream.runCollect(provider.downloadMedia(channelId, source))
        assert.isTrue(Buffer.concat(Chunk.toReadonlyArray(downloaded)).equals(bytes))
      }))

    it.scoped("asks the sender's phone to upload a media again when the host answers 410, then downloads it", () =>
      Effect.gen(function*() {
        const { a, channelId, wa } = yield* paired
        const gina = wa.contact("+447700900601")
        const bytes = randomBytes(50_000)
        const { id, media } = yield* gina.sendsMedia("audio", bytes, { mimetype: "audio/ogg; codecs=opus", ptt: true })
        const body = (yield* inboundWithId(a, id)).body
        if (body._tag !== "media") return assert.fail(body._tag)
        assert.isTrue(body.voice)
        wa.media.expire(media.directPath)

        const provider = a.provider
        const downloaded = yield* Stream.runCollect(provider.downloadMedia(channelId, body.source))
        assert.isTrue(Buffer.concat(Chunk.toReadonlyArray(downloaded)).equals(bytes))
        assert.deepStrictEqual(wa.reuploadRequests, [id])
      }))

    it.scoped("fails a download whose media is gone for good as permanent, and an unusable handle likewise", () =>
      Effect.gen(function*() {
        const { a, channelId, wa } = yield* paired
        const hank = wa.contact("+447700900701")
        const { id, media } = yield* hank.sendsMedia("document", randomBytes(1000), { fileName: "a.pdf" })
        const body = (yield* inboundWithId(a, id)).body
        if (body._tag !== "media") return assert.fail(body._tag)
        wa.media.expire(media.directPath)
        wa.published.delete(id) // the phone no longer has it either

        const provider = a.provider
        const gone = yield* Effect.flip(Stream.runDrain(provider.downloadMedia(channelId, body.source)))
        assert.strictEqual(gone.retryable, false)
        assert.notInclude(gone.reason, wa.media.hostname)
        const unusable = yield* Effect.flip(Stream.runDrain(provider.downloadMedia(channelId, { nonsense: true })))
        assert.strictEqual(unusable.retryable, false)
      }))
  })
})
