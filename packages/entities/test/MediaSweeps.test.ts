/**
 * The media worker's sweeps as the workspace's usage shows them (docs/API.md "Media"): stored bytes
 * count in `media_bytes` while they are kept and no more once retention purged them; an upload a
 * crash left `pending` (row and chunks, invisible to every read) is removed `STALE_UPLOAD_MS`
 * after it began, not before, and a live upload, a ready one and a pending download are left alone.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it as unit, layer } from "@effect/vitest"
import { MediaRepo, MediaStore, UsageRepo } from "@switchboard/db"
import * as TestDatabase from "@switchboard/db/testing"
import { Ids, Schemas } from "@switchboard/domain"
import { MediaWorker } from "@switchboard/entities"
import { ChannelProviders } from "@switchboard/providers"
import { Clock, Effect, Layer, Stream, TestClock } from "effect"
import { randomBytes } from "node:crypto"
import { setupChannel } from "./support.js"

const TestLayer = Layer.mergeAll(
  MediaWorker.dependencies,
  UsageRepo.UsageRepo.Default,
  Layer.succeed(ChannelProviders.ChannelProviders, ChannelProviders.make({}))
).pipe(Layer.provideMerge(TestDatabase.sqlLayer))

/** An upload whose bytes are (partly) in: `complete` settles it `ready`, else it stays `pending`. */
const upload = (workspaceId: string, size: number, complete: boolean) =>
  Effect.gen(function*() {
    const repo = yield* MediaRepo.MediaRepo
    const store = yield* MediaStore.MediaStore
    const id = yield* Ids.newId("med")
    const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
    const expiresAt = Schemas.toTimestamp((yield* Clock.currentTimeMillis) + 30 * 86_400_000)
    yield* repo.createUpload({
      id,
      workspaceId,
      kind: "document",
      mimeType: "application/pdf",
      filename: null,
      now,
      expiresAt
    })
    const stored = yield* store.write(id, Stream.make(new Uint8Array(randomBytes(size))), size)
    if (complete) {
      yield* repo.settle({
        id,
        status: "ready",
        sizeBytes: stored.sizeBytes,
        sha256: stored.sha256,
        failure: null,
        now
      })
    }
    return id
  }).pipe(Effect.orDie)

const mediaBytes = (workspaceId: string) =>
  Effect.gen(function*() {
    const usage = yield* UsageRepo.UsageRepo
    const at = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
    return (yield* usage.counts(workspaceId, at, at, at)).media_bytes
  })

describe("media sweeps", () => {
  unit("an upload is stale an hour after it began", () => {
    assert.strictEqual(MediaWorker.STALE_UPLOAD_MS, 3_600_000)
    assert.strictEqual(MediaWorker.staleUploadCutoff(10_000_000), 6_400_000)
  })

  layer(TestLayer, { timeout: 60_000 })((it) => {
    it.effect("usage counts stored bytes while they are kept, and not after retention purged them", () =>
      Effect.gen(function*() {
        const worker = yield* MediaWorker.make
        const { workspaceId } = yield* setupChannel()
        const other = yield* setupChannel()
        assert.strictEqual(yield* mediaBytes(workspaceId), 0)
        yield* upload(workspaceId, 300_000, true)
        assert.strictEqual(yield* mediaBytes(workspaceId), 300_000)
        yield* TestClock.adjust("1 day")
        yield* upload(workspaceId, 1_000, true)
        // another workspace's files and a file still streaming in do not count
        yield* upload(other.workspaceId, 5_000, true)
        yield* upload(workspaceId, 7_000, false)
        assert.strictEqual(yield* mediaBytes(workspaceId), 301_000)

        // retention (30 days) purges the first file only
        yield* TestClock.adjust("29 days")
        yield* worker.expire
        assert.strictEqual(yield* mediaBytes(workspaceId), 1_000)
        yield* TestClock.adjust("1 day")
        yield* worker.expire
        assert.strictEqual(yield* mediaBytes(workspaceId), 0)
        assert.strictEqual(yield* mediaBytes(other.workspaceId), 0)
      }))

    it.effect("removes an upload a crash left pending once the bound passed, with its chunks", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const worker = yield* MediaWorker.make
        const { workspaceId } = yield* setupChannel()
        const chunks = (id: string) =>
          Effect.map(
            sql<{ n: number }>`SELECT count(*)::int AS n FROM media_chunks WHERE media_id = ${id}`,
            (r) => r[0]!.n
          )
        const rowOf = (id: string) => sql<{ status: string }>`SELECT status FROM media WHERE id = ${id}`

        // the process died mid-upload: a pending row with two chunks written
        const crashed = yield* upload(workspaceId, 600_000, false)
        const ready = yield* upload(workspaceId, 2_000, true)
        assert.strictEqual(yield* chunks(crashed), 3)
        // a pending inbound download (due at a time, of a message) is the download worker's
        const download = yield* Ids.newId("med")
        const now = Schemas.toTimestamp(yield* Clock.currentTimeMillis)
        yield* (yield* MediaRepo.MediaRepo).createInbound({
          id: download,
          workspaceId,
          channelId: (yield* sql<{ id: string }>`SELECT id FROM channels WHERE workspace_id = ${workspaceId}`)[0]!.id,
          messageId: yield* Ids.newId("msg"),
          kind: "image",
          mimeType: "image/png",
          filename: null,
          expectedSize: null,
          expectedSha256: null,
          source: { key: "x" },
          now,
          expiresAt: Schemas.toTimestamp((yield* Clock.currentTimeMillis) + 86_400_000)
        })
        yield* sql`UPDATE media SET next_attempt_at = ${
          Schemas.toTimestamp((yield* Clock.currentTimeMillis) + 7_200_000)
        }
          WHERE id = ${download}`

        // just before the bound: a slow upload could still be streaming
        yield* TestClock.adjust(MediaWorker.STALE_UPLOAD_MS - 1_000)
        const live = yield* upload(workspaceId, 1_000, false)
        // (the database is shared with the other tests: their leftovers may go, so rows are checked)
        yield* worker.sweepUploads
        assert.strictEqual((yield* rowOf(crashed)).length, 1)
        assert.strictEqual(yield* chunks(crashed), 3)

        yield* TestClock.adjust("2 seconds")
        assert.isAtLeast(yield* worker.sweepUploads, 1)
        assert.strictEqual((yield* rowOf(crashed)).length, 0)
        assert.strictEqual(yield* chunks(crashed), 0)
        // the rest stays
        assert.deepStrictEqual((yield* rowOf(ready)).map((r) => r.status), ["ready"])
        assert.deepStrictEqual((yield* rowOf(live)).map((r) => r.status), ["pending"])
        assert.deepStrictEqual((yield* rowOf(download)).map((r) => r.status), ["pending"])
      }).pipe(Effect.orDie))
  })
})
