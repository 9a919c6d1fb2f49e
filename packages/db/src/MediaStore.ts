/**
 * Where the bytes of media live (docs/API.md "Media"). By default this store keeps them in Postgres
 * (embedded and real alike), in `media_chunks` rows of `CHUNK_BYTES` (`MEDIA_STORE=filesystem`: in
 * files, `MediaFileStore`, the same contract): a write consumes a stream chunk by chunk
 * (hashing and counting as it goes, refusing past the limit while streaming), a read streams the
 * chunks a byte range needs, one at a time. Nothing ever holds a whole file in memory, so a
 * 100 MiB document costs one chunk of memory. An upload (`POST /v1/media`, later) streams its
 * request body into `write` the same way a download from a provider does.
 */
import { SqlClient } from "@effect/sql"
import { Config, Data, Effect, Option, Schema, Stream } from "effect"
import { createHash } from "node:crypto"
import { join, resolve } from "node:path"
import type { DatabaseUnavailable } from "./DatabaseUnavailable.js"
import * as MediaFileStore from "./MediaFileStore.js"
import { decodeRows, dieOnDatabaseError } from "./Rows.js"

/** A chunk of a stored file's bytes (`bytea`: the driver's `Uint8Array`). */
const decodeChunks = decodeRows(Schema.Struct({ data: Schema.Uint8ArrayFromSelf }))

/** Bytes per stored chunk: every chunk but a file's last has exactly this size. */
export const CHUNK_BYTES = 256 * 1024

/** The stream went past `limitBytes` (nothing of it is kept). */
export class MediaTooLarge extends Data.TaggedError("MediaTooLarge")<{ readonly limitBytes: number }> {}

export interface Stored {
  readonly sizeBytes: number
  /** hex SHA-256 */
  readonly sha256: string
}

/**
 * A store's `write` reading its stream: counts and hashes every piece, fails with `MediaTooLarge`
 * as soon as the pieces pass `limitBytes` (the piece that does is not kept), and hands each other
 * piece to `keep`, one at a time. What was read: its size and SHA-256.
 */
export const consume = <E, R, E2, R2>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  limitBytes: number,
  keep: (piece: Uint8Array) => Effect.Effect<void, E2, R2>
): Effect.Effect<Stored, E | E2 | MediaTooLarge, R | R2> =>
  Effect.suspend(() => {
    const hash = createHash("sha256")
    let size = 0
    return bytes.pipe(
      Stream.mapError((e): E | E2 | MediaTooLarge => e),
      Stream.runForEach((piece): Effect.Effect<void, E2 | MediaTooLarge, R2> => {
        size += piece.byteLength
        if (size > limitBytes) return Effect.fail(new MediaTooLarge({ limitBytes }))
        hash.update(piece)
        return keep(piece)
      }),
      Effect.map((): Stored => ({ sizeBytes: size, sha256: hash.digest("hex") }))
    )
  })

/** What either store offers (`MediaFileStore` is the filesystem's). */
export interface Store {
  /**
   * Stores the stream as the media's bytes (replacing any earlier write); fails with `MediaTooLarge`
   * as soon as it passes `limitBytes`, and with the stream's own error, having dropped what it wrote.
   */
  readonly write: <E, R>(
    mediaId: string,
    bytes: Stream.Stream<Uint8Array, E, R>,
    limitBytes: number
  ) => Effect.Effect<Stored, E | MediaTooLarge | DatabaseUnavailable, R>
  /** The bytes from `start` to `end` (inclusive), streamed; none when the media has none. */
  readonly read: (mediaId: string, start: number, end: number) => Stream.Stream<Uint8Array, DatabaseUnavailable>
  /** Drops the bytes of a media (a failed write, retention). */
  readonly purge: (mediaId: string) => Effect.Effect<void, DatabaseUnavailable>
}

/**
 * Where the bytes go: `MEDIA_STORE=database` (the default: `media_chunks` rows) or `filesystem`
 * (`MediaFileStore`: files under `MEDIA_DIR`, default `<DATA_DIR>/media`). Every api node and runner
 * must see the same store.
 */
export const config = Config.all({
  kind: Config.literal("database", "filesystem")("MEDIA_STORE").pipe(Config.withDefault("database" as const)),
  dir: Config.string("MEDIA_DIR").pipe(
    Config.orElse(() =>
      Config.map(Config.string("DATA_DIR").pipe(Config.withDefault("./data")), (d) => join(d, "media"))
    )
  )
})

export class MediaStore extends Effect.Service<MediaStore>()("@switchboard/db/MediaStore", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // a value that does not parse stops the process at start
    const chosen = yield* Effect.orDie(config)
    if (chosen.kind === "filesystem") {
      const files: Store = MediaFileStore.make(resolve(chosen.dir))
      return files
    }

    const insertChunk = (mediaId: string, seq: number, data: Uint8Array) =>
      dieOnDatabaseError(
        sql`INSERT INTO media_chunks (media_id, seq, data) VALUES (${mediaId}, ${seq}, ${
          Buffer.from(data.buffer, data.byteOffset, data.byteLength)
        })`
      )

    /** Drops the bytes of a media (a failed write, retention). */
    const purge = (mediaId: string) => dieOnDatabaseError(sql`DELETE FROM media_chunks WHERE media_id = ${mediaId}`)

    /**
     * Stores the stream as the media's bytes (replacing any earlier partial write); fails with
     * `MediaTooLarge` as soon as it passes `limitBytes`, and with the stream's own error, having
     * dropped what it wrote either way.
     */
    const write = <E, R>(mediaId: string, bytes: Stream.Stream<Uint8Array, E, R>, limitBytes: number) =>
      Effect.gen(function*() {
        yield* purge(mediaId)
        let seq = 0
        let pending: Array<Uint8Array> = []
        let pendingBytes = 0
        const flush = (final: boolean) =>
          Effect.gen(function*() {
            while (pendingBytes >= CHUNK_BYTES || (final && pendingBytes > 0)) {
              const joined = Buffer.concat(pending, pendingBytes)
              const take = Math.min(CHUNK_BYTES, joined.byteLength)
              yield* insertChunk(mediaId, seq++, joined.subarray(0, take))
              const rest = joined.subarray(take)
              pending = rest.byteLength > 0 ? [rest] : []
              pendingBytes = rest.byteLength
            }
          })
        const stored = yield* consume(bytes, limitBytes, (piece) =>
          Effect.suspend(() => {
            pending.push(piece)
            pendingBytes += piece.byteLength
            return pendingBytes >= CHUNK_BYTES ? flush(false) : Effect.void
          }))
        yield* flush(true)
        return stored
      }).pipe(Effect.onError(() => purge(mediaId).pipe(Effect.catchAllCause(() => Effect.void))))

    /** The bytes from `start` to `end` (inclusive), streamed chunk by chunk. */
    const read = (mediaId: string, start: number, end: number): Stream.Stream<Uint8Array, DatabaseUnavailable> =>
      Stream.unfoldEffect(Math.floor(start / CHUNK_BYTES), (seq) =>
        seq * CHUNK_BYTES > end
          ? Effect.succeed(Option.none())
          : Effect.map(
            dieOnDatabaseError(
              Effect.flatMap(
                sql`SELECT data FROM media_chunks WHERE media_id = ${mediaId} AND seq = ${seq}`,
                decodeChunks
              )
            ),
            (rows): Option.Option<readonly [Uint8Array, number]> => {
              const data = rows[0]?.data
              if (data === undefined) return Option.none()
              const offset = seq * CHUNK_BYTES
              const from = Math.max(0, start - offset)
              const to = Math.min(data.byteLength, end - offset + 1)
              return Option.some([data.subarray(from, to), seq + 1] as const)
            }
          ))

    const database: Store = { write, read, purge: (mediaId) => Effect.asVoid(purge(mediaId)) }
    return database
  })
}) {}
