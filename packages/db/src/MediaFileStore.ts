/**
 * `MEDIA_STORE=filesystem` (docs/OPERATING.md "Media and backups"): the bytes of each media in a
 * file of its own under `MEDIA_DIR` (a directory, or a volume every api node and runner mounts),
 * the rows staying in Postgres. The same contract as the database store (`MediaStore`): a write
 * consumes the stream piece by piece (hashing and counting, refusing past the limit while
 * streaming) into a temporary file that is flushed to disk and renamed into place only once every
 * byte is in, so a reader never sees half a file; a failed or refused write leaves nothing; a read
 * streams the byte range asked for. Nothing holds a whole file in memory.
 *
 * Files are spread over 1,024 folders by the last two characters of the id (the random end of a
 * ULID), so no folder grows to millions of entries.
 */
import { Effect, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { createReadStream } from "node:fs"
import { mkdir, open, rename, rm } from "node:fs/promises"
import { dirname, join } from "node:path"
import { CHUNK_BYTES, consume } from "./MediaStore.js"

/** Where the bytes of `mediaId` live under `dir`; an id that is not a plain identifier is a defect. */
export const pathOf = (dir: string, mediaId: string): string => {
  if (!/^[A-Za-z0-9_]+$/.test(mediaId)) throw new Error("media id is not an identifier")
  return join(dir, mediaId.slice(-2), mediaId)
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code === "ENOENT"

export const make = (dir: string) => {
  /** Drops the bytes of a media (a failed write, retention); nothing to drop is fine. */
  const purge = (mediaId: string) => Effect.promise(() => rm(pathOf(dir, mediaId), { force: true }))

  const write = <E, R>(mediaId: string, bytes: Stream.Stream<Uint8Array, E, R>, limitBytes: number) =>
    Effect.gen(function*() {
      const target = pathOf(dir, mediaId)
      const temporary = join(dirname(target), `.${mediaId}.${randomBytes(6).toString("hex")}.partial`)
      yield* purge(mediaId)
      yield* Effect.promise(() => mkdir(dirname(target), { recursive: true }))
      return yield* Effect.acquireUseRelease(
        Effect.promise(() => open(temporary, "wx")),
        (file) =>
          Effect.gen(function*() {
            const stored = yield* consume(bytes, limitBytes, (piece) => Effect.promise(() => file.write(piece)))
            // on disk before it is named: a crash after the rename never leaves a short file
            yield* Effect.promise(() => file.datasync())
            return stored
          }),
        (file, exit) =>
          Effect.promise(() => file.close()).pipe(
            Effect.zipRight(
              exit._tag === "Success"
                ? Effect.promise(() => rename(temporary, target))
                : Effect.promise(() => rm(temporary, { force: true }))
            )
          )
      )
    })

  /** The bytes from `start` to `end` (inclusive), streamed; none when the media has no bytes here. */
  const read = (mediaId: string, start: number, end: number): Stream.Stream<Uint8Array> =>
    Stream.fromAsyncIterable(
      createReadStream(pathOf(dir, mediaId), { start, end, highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>,
      (error) => error
    ).pipe(
      Stream.map((piece) => new Uint8Array(piece.buffer, piece.byteOffset, piece.byteLength)),
      Stream.catchAll((error) => isMissing(error) ? Stream.empty : Stream.die(error))
    )

  return { write, read, purge } as const
}
