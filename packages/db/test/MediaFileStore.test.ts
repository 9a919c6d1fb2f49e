/**
 * `MEDIA_STORE=filesystem`: the same `MediaStore` service keeps the bytes in files under
 * `MEDIA_DIR` (packages/db/src/MediaFileStore.ts), with the contract of the database store
 * (MediaStore.test.ts): size and hash, any byte range, a refused or failed stream leaves nothing,
 * purge; and no byte in `media_chunks`.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { MediaStore } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Chunk, ConfigProvider, Effect, Layer, Stream } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"

const dir = mkdtempSync(join(tmpdir(), "sbt-media-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const FileStore = MediaStore.MediaStore.Default.pipe(
  Layer.provide(
    Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["MEDIA_STORE", "filesystem"], ["MEDIA_DIR", dir]])))
  )
)
const TestLayer = FileStore.pipe(Layer.provideMerge(TestDatabase.sqlLayer))

const pieces = (bytes: Buffer) =>
  Stream.fromIterable(
    [0, 1000, 70_000, 300_000, 301_111, bytes.length].flatMap((at, i, all) =>
      i === 0 ? [] : [new Uint8Array(bytes.subarray(all[i - 1]!, at))]
    )
  )
const collect = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (c) => Buffer.concat(Chunk.toReadonlyArray(c)))
/** Every file under the store's directory (temporary ones included). */
const files = () =>
  readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name)
let n = 0
const newId = () => `med_01TEST${String(++n).padStart(20, "0")}`

describe("MediaStore with MEDIA_STORE=filesystem", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.effect("stores a stream in a file with its size and hash, reads any range back, and writes no chunk row", () =>
      Effect.gen(function*() {
        const store = yield* MediaStore.MediaStore
        const sql = yield* SqlClient.SqlClient
        const id = newId()
        const bytes = randomBytes(2 * MediaStore.CHUNK_BYTES + 12_345)
        const stored = yield* store.write(id, pieces(bytes), 10 * 1024 * 1024)
        assert.strictEqual(stored.sizeBytes, bytes.length)
        assert.strictEqual(stored.sha256, createHash("sha256").update(bytes).digest("hex"))
        assert.isTrue(readFileSync(join(dir, id.slice(-2), id)).equals(bytes))
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM media_chunks WHERE media_id = ${id}`
        assert.strictEqual(Number(rows[0]!.n), 0)
        assert.isTrue((yield* collect(store.read(id, 0, bytes.length - 1))).equals(bytes))
        for (
          const [start, end] of [[0, 0], [MediaStore.CHUNK_BYTES - 3, MediaStore.CHUNK_BYTES + 3], [
            10,
            2 * MediaStore.CHUNK_BYTES + 100
          ]]
        ) {
          assert.isTrue((yield* collect(store.read(id, start!, end!))).equals(bytes.subarray(start!, end! + 1)))
        }
      }))

    it.effect("refuses a stream past the limit while streaming and keeps nothing of it, nor of a failed one", () =>
      Effect.gen(function*() {
        const store = yield* MediaStore.MediaStore
        const id = newId()
        const before = files().length
        const error = yield* Effect.flip(
          store.write(id, pieces(randomBytes(MediaStore.CHUNK_BYTES * 2)), MediaStore.CHUNK_BYTES + 10)
        )
        assert.strictEqual(error._tag, "MediaTooLarge")
        const broken = Stream.concat(pieces(randomBytes(5000)), Stream.fail("connection reset" as const))
        assert.strictEqual(yield* Effect.flip(store.write(newId(), broken, 1_000_000)), "connection reset")
        assert.strictEqual(files().length, before, "no file, no temporary file")
        assert.strictEqual((yield* collect(store.read(id, 0, 100))).length, 0)
      }))

    it.effect("replaces an earlier write, and purge removes the bytes (twice is fine)", () =>
      Effect.gen(function*() {
        const store = yield* MediaStore.MediaStore
        const id = newId()
        yield* store.write(id, pieces(randomBytes(400_000)), 1_000_000)
        const second = randomBytes(1234)
        yield* store.write(id, Stream.make(new Uint8Array(second)), 1_000_000)
        assert.isTrue((yield* collect(store.read(id, 0, 10_000))).equals(second))
        yield* store.purge(id)
        yield* store.purge(id)
        assert.isFalse(existsSync(join(dir, id.slice(-2), id)))
        assert.strictEqual((yield* collect(store.read(id, 0, 10))).length, 0)
      }))
  })
})
