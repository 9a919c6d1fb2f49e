import { SqlClient } from "@effect/sql"
import { assert, describe, layer } from "@effect/vitest"
import { MediaRepo, MediaStore } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, Schemas } from "@switchboard/domain"
import { Chunk, Effect, Layer, Stream } from "effect"
import { createHash, randomBytes } from "node:crypto"

const TestLayer = Layer.mergeAll(MediaStore.MediaStore.Default, MediaRepo.MediaRepo.Default).pipe(
  Layer.provideMerge(TestDatabase.sqlLayer)
)

/** A pending media row of a new workspace (chunks reference it). */
const mediaRow = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const repo = yield* MediaRepo.MediaRepo
  const now = Schemas.toTimestamp(Date.now())
  const workspaceId = yield* Ids.newId("ws")
  yield* sql`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (${workspaceId}, 'w', ${now}, ${now})`
  const id = yield* Ids.newId("med")
  yield* repo.createInbound({
    id,
    workspaceId,
    channelId: null as unknown as string,
    messageId: "msg_x",
    kind: "document",
    mimeType: "application/pdf",
    filename: "a.pdf",
    expectedSize: null,
    expectedSha256: null,
    source: null,
    now,
    expiresAt: now
  })
  return id
})

/** `bytes` as a stream of uneven pieces (as a network hands them over). */
const pieces = (bytes: Buffer) =>
  Stream.fromIterable(
    [0, 1000, 70_000, 300_000, 301_111, bytes.length].flatMap((at, i, all) =>
      i === 0 ? [] : [new Uint8Array(bytes.subarray(all[i - 1]!, at))]
    )
  )

const collect = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (c) => Buffer.concat(Chunk.toReadonlyArray(c)))

describe("MediaStore", () => {
  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.effect("stores a stream in fixed-size chunks with its size and hash, and reads any range back", () =>
      Effect.gen(function*() {
        const store = yield* MediaStore.MediaStore
        const sql = yield* SqlClient.SqlClient
        const id = yield* mediaRow
        const bytes = randomBytes(2 * MediaStore.CHUNK_BYTES + 12_345)
        const stored = yield* store.write(id, pieces(bytes), 10 * 1024 * 1024)
        assert.strictEqual(stored.sizeBytes, bytes.length)
        assert.strictEqual(stored.sha256, createHash("sha256").update(bytes).digest("hex"))
        const chunks = yield* sql<{ n: number }>`SELECT length(data) AS n FROM media_chunks WHERE media_id = ${id}
          ORDER BY seq`
        assert.deepStrictEqual(chunks.map((c) => Number(c.n)), [MediaStore.CHUNK_BYTES, MediaStore.CHUNK_BYTES, 12_345])
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

    it.effect("refuses a stream past the limit while streaming and keeps nothing of it", () =>
      Effect.gen(function*() {
        const store = yield* MediaStore.MediaStore
        const sql = yield* SqlClient.SqlClient
        const id = yield* mediaRow
        const bytes = randomBytes(MediaStore.CHUNK_BYTES * 2)
        const error = yield* Effect.flip(store.write(id, pieces(bytes), MediaStore.CHUNK_BYTES + 10))
        assert.strictEqual(error._tag, "MediaTooLarge")
        const left = yield* sql`SELECT 1 FROM media_chunks WHERE media_id = ${id}`
        assert.strictEqual(left.length, 0)
      }))
  })
})
