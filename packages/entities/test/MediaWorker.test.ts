/**
 * The media worker (docs/API.md "Media"): an inbound file's bytes are fetched through the channel's
 * provider, checked and stored before `message.received`; retryable failures are retried with
 * backoff up to `MAX_ATTEMPTS`, then the media is `failed` and the event still goes out, once;
 * a download a dead runner left claimed is taken up again; retention purges the bytes.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { ChannelsRepo, ContactsRepo, ConversationsRepo, MediaStore, MessagesRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Schemas } from "@switchboard/domain"
import { InboundMessages, MediaWorker } from "@switchboard/entities"
import { ChannelProvider, ChannelProviders } from "@switchboard/providers"
import { Chunk, Clock, Effect, Layer, Option, Stream, TestClock } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { eventTypes, setupChannel } from "./support.js"

/** What the fake provider's media host answers for each source, attempt by attempt. */
const answers = new Map<string, Array<"retryable" | "permanent" | Buffer>>()

const provider: ChannelProvider.ChannelProvider = {
  connect: () => Effect.die("not used"),
  downloadMedia: (_channelId, source) => {
    const key = (source as { key: string }).key
    const next = answers.get(key)?.shift()
    if (next === undefined || next === "retryable" || next === "permanent") {
      return Stream.fail(
        new ChannelProvider.MediaDownloadFailed({
          retryable: next !== "permanent",
          reason: `the media host said ${next ?? "nothing"}`
        })
      )
    }
    // in uneven pieces, as a network hands them over
    return Stream.fromIterable([next.subarray(0, 1000), next.subarray(1000)].map((b) => new Uint8Array(b)))
  }
}

const TestLayer = Layer.mergeAll(
  InboundMessages.InboundMessages.Default,
  MessagesRepo.MessagesRepo.Default,
  ContactsRepo.ContactsRepo.Default,
  ConversationsRepo.ConversationsRepo.Default,
  ChannelsRepo.ChannelsRepo.Default,
  MediaStore.MediaStore.Default,
  MediaWorker.dependencies,
  Layer.succeed(ChannelProviders.ChannelProviders, ChannelProviders.make({ sandbox: provider }))
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

/** Bytes of an image/jpeg (its signature first): inbound files pass the byte check every door runs. */
const jpeg = (size: number) => {
  const bytes = randomBytes(size)
  Buffer.from([0xff, 0xd8, 0xff, 0xe0]).copy(bytes)
  return bytes
}

let n = 0
/** An inbound image whose bytes the fake host serves as `answers` says. */
const inboundImage = (
  target: { readonly workspaceId: string; readonly channelId: string },
  given: Array<"retryable" | "permanent" | Buffer>,
  announced: { readonly size?: number; readonly sha256?: string } = {}
) =>
  Effect.gen(function*() {
    const inbound = yield* InboundMessages.InboundMessages
    const key = `file-${n++}`
    answers.set(key, given)
    return Option.getOrThrow(
      yield* inbound.record({
        workspaceId: target.workspaceId,
        channelId: target.channelId,
        channelNumber: null,
        content: {
          providerMessageId: key,
          sender: { phoneNumber: "+4915112345678", whatsappLid: null },
          body: {
            _tag: "media",
            kind: "image",
            mimeType: "image/jpeg",
            caption: null,
            filename: null,
            voice: false,
            sizeBytes: announced.size ?? null,
            sha256: announced.sha256 ?? null,
            source: { key }
          },
          quotedProviderMessageId: null,
          at: 0
        },
        now: Schemas.toTimestamp(yield* Clock.currentTimeMillis)
      })
    )
  })

const received = (id: string) =>
  Effect.map(eventTypes(id), (events) => events.filter((e) => e.type === "message.received"))

const stored = (mediaId: string, size: number) =>
  Effect.flatMap(
    MediaStore.MediaStore,
    (store) =>
      Effect.map(Stream.runCollect(store.read(mediaId, 0, size - 1)), (c) => Buffer.concat(Chunk.toReadonlyArray(c)))
  )

describe("MediaWorker", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.effect("retries a retryable failure with backoff, then stores the bytes and emits message.received once", () =>
      Effect.gen(function*() {
        const messages = yield* MessagesRepo.MessagesRepo
        const worker = yield* MediaWorker.make
        const target = yield* setupChannel()
        const bytes = jpeg(5000)
        const sha = createHash("sha256").update(bytes).digest("base64")
        const message = yield* inboundImage(target, ["retryable", bytes], { size: bytes.length, sha256: sha })
        assert.strictEqual(message.media!.status, "pending")
        assert.deepStrictEqual(yield* received(message.id), [])
        assert.strictEqual(yield* worker.drain, 1)
        // not due again before its backoff
        assert.strictEqual(yield* worker.drain, 0)
        assert.deepStrictEqual(yield* received(message.id), [])
        yield* TestClock.adjust("3 seconds")
        assert.strictEqual(yield* worker.drain, 1)
        const after = Option.getOrThrow(yield* messages.findById(message.id))
        assert.deepStrictEqual(after.media, { id: message.media!.id, status: "ready", failure_reason: null })
        assert.strictEqual(after.image!.size_bytes, bytes.length)
        assert.strictEqual(after.image!.sha256, createHash("sha256").update(bytes).digest("hex"))
        assert.isTrue((yield* stored(message.media!.id, bytes.length)).equals(bytes))
        const events = yield* received(message.id)
        assert.strictEqual(events.length, 1)
        assert.strictEqual(events[0]!.data.type, "image")
        assert.strictEqual(events[0]!.data.media_status, "ready")
      }))

    it.effect("marks the media failed after a permanent failure or too many attempts; the event still goes out", () =>
      Effect.gen(function*() {
        const messages = yield* MessagesRepo.MessagesRepo
        const worker = yield* MediaWorker.make
        const target = yield* setupChannel()
        const gone = yield* inboundImage(target, ["permanent"])
        yield* worker.drain
        const failed = Option.getOrThrow(yield* messages.findById(gone.id))
        assert.strictEqual(failed.media!.status, "failed")
        assert.strictEqual(failed.media!.failure_reason, "the media host said permanent")
        assert.deepStrictEqual((yield* received(gone.id)).map((e) => e.data.media_status), ["failed"])

        // a file whose hash never matches what was announced: retried, then given up
        const bytes = jpeg(2000)
        const tries = Array.from({ length: MediaWorker.MAX_ATTEMPTS }, () => bytes)
        const corrupt = yield* inboundImage(target, tries, { sha256: "0".repeat(64) })
        for (let i = 0; i < MediaWorker.MAX_ATTEMPTS; i++) {
          yield* worker.drain
          yield* TestClock.adjust("10 minutes")
        }
        const given = Option.getOrThrow(yield* messages.findById(corrupt.id))
        assert.strictEqual(given.media!.status, "failed")
        assert.match(given.media!.failure_reason!, /hash/)
        assert.strictEqual((yield* received(corrupt.id)).length, 1)
        const sql = yield* SqlClient.SqlClient
        const chunks = yield* sql`SELECT 1 FROM media_chunks WHERE media_id = ${corrupt.media!.id}`
        assert.strictEqual(chunks.length, 0)
      }))

    it.effect("fails a provider's file whose bytes are not the type it announced, as an upload would be refused", () =>
      Effect.gen(function*() {
        const messages = yield* MessagesRepo.MessagesRepo
        const worker = yield* MediaWorker.make
        const target = yield* setupChannel()
        // PNG bytes announced as image/jpeg
        const png = randomBytes(3000)
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(png)
        const mislabelled = yield* inboundImage(target, [png])
        yield* worker.drain
        const after = Option.getOrThrow(yield* messages.findById(mislabelled.id))
        assert.strictEqual(after.media!.status, "failed")
        assert.strictEqual(after.media!.failure_reason, "The file's bytes are not an image of the type announced")
        assert.deepStrictEqual((yield* received(mislabelled.id)).map((e) => e.data.media_status), ["failed"])
        const sql = yield* SqlClient.SqlClient
        const chunks = yield* sql`SELECT 1 FROM media_chunks WHERE media_id = ${mislabelled.media!.id}`
        assert.strictEqual(chunks.length, 0)
      }))

    it.effect("takes up a download a dead runner left claimed, and purges media past retention", () =>
      Effect.gen(function*() {
        const messages = yield* MessagesRepo.MessagesRepo
        const sql = yield* SqlClient.SqlClient
        const target = yield* setupChannel()
        const bytes = jpeg(3000)
        const message = yield* inboundImage(target, [bytes])
        // the first runner claimed it and died before storing anything
        const first = yield* MediaWorker.make
        yield* sql`UPDATE media SET claimed_at = now(), attempts = 1 WHERE id = ${message.media!.id}`
        assert.strictEqual(yield* first.drain, 0)
        // its successor (the singleton starts again elsewhere) releases the claim and stores it
        const second = yield* MediaWorker.make
        yield* second.releaseClaims
        assert.strictEqual(yield* second.drain, 1)
        assert.strictEqual(Option.getOrThrow(yield* messages.findById(message.id)).media!.status, "ready")
        assert.strictEqual((yield* received(message.id)).length, 1)

        // retention: the bytes are purged and the media reads expired
        yield* TestClock.adjust("31 days")
        yield* second.expire
        const expired = Option.getOrThrow(yield* messages.findById(message.id))
        assert.strictEqual(expired.media!.status, "expired")
        const chunks = yield* sql`SELECT 1 FROM media_chunks WHERE media_id = ${message.media!.id}`
        assert.strictEqual(chunks.length, 0)
        assert.strictEqual((yield* received(message.id)).length, 1)
      }))
  })
})
