/**
 * Stored media as the API serves them (docs/API.md "Media"): metadata, and the bytes streamed from
 * `MediaStore` with `ETag`, `Range` (one range) and `Content-Disposition`. Workspace-scoped: a
 * media of another workspace is 404, like one that does not exist.
 */
import { HttpServerResponse } from "@effect/platform"
import { MediaRepo, MediaStore, Transactions } from "@switchboard/db"
import { Errors, Ids, Media, MediaSniff, MessageContent, Schemas } from "@switchboard/domain"
import { Clock, Effect, Option, Sink, Stream } from "effect"
import { setHeader } from "../ResponseHeaders.js"
import { Idempotency } from "./Idempotency.js"

/** What an upload declared (headers and query). */
export interface UploadRequest {
  readonly contentType: string | undefined
  readonly contentLength: string | undefined
  readonly filename: string | undefined
  readonly kind: MessageContent.MediaKind | undefined
  readonly idempotencyKey: string | undefined
}

/** A type declared that names nothing: the type is read from the bytes. */
const undeclared = (type: string) => type === "" || type === "application/octet-stream"

/** The leading bytes of a stream (at least `SNIFF_BYTES` unless it is shorter) and the rest of it. */
const headSink = Sink.fold<Uint8Array, Uint8Array>(
  new Uint8Array(0),
  (head) => head.byteLength < MediaSniff.SNIFF_BYTES,
  (head, piece) => head.byteLength === 0 ? piece : new Uint8Array(Buffer.concat([head, piece]))
)

const tooLarge = (limit: number) =>
  new Errors.PayloadTooLarge({ message: `The file is larger than ${limit} bytes`, details: { limit_bytes: limit } })

const emptyFile = () =>
  new Errors.ValidationError({
    message: "The file is empty",
    details: { issues: [{ path: ["body"], message: "Expected the file's bytes" }] }
  })

const incomplete = () =>
  new Errors.ValidationError({
    message: "The upload ended before the whole body arrived",
    details: { reason: "body_incomplete", issues: [{ path: ["body"], message: "Incomplete" }] }
  })

const typeRefused = (kind: MessageContent.MediaKind, type: string) =>
  new Errors.ValidationError({
    message: MessageContent.MEDIA_TYPES[kind] === null
      ? "The file's bytes are not of a type any media kind takes"
      : `${/^[aeiou]/.test(kind) ? "An" : "A"} ${kind} takes ${
        MessageContent.MEDIA_TYPES[kind]!.join(", ")
      }, and the bytes must be of the declared type`,
    details: {
      reason: "media_type_unsupported",
      issues: [{
        path: ["content-type"],
        message: undeclared(type) ? "Unknown type" : "Not taken, or not the bytes' type"
      }]
    }
  })

/** A `Range` header against a file of `size` bytes: the one range asked, `None` for the whole file. */
export const parseRange = (
  header: string | undefined,
  size: number
): Option.Option<{ readonly start: number; readonly end: number }> | "unsatisfiable" => {
  if (header === undefined) return Option.none()
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  // several ranges or another unit: the whole file (RFC 9110 lets a server ignore Range)
  if (match === null || (match[1] === "" && match[2] === "")) return Option.none()
  if (match[1] === "") {
    const suffix = Number(match[2])
    if (suffix === 0) return "unsatisfiable"
    return Option.some({ start: Math.max(0, size - suffix), end: size - 1 })
  }
  const start = Number(match[1])
  const end = match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1)
  if (start >= size) return "unsatisfiable"
  if (end < start) return Option.none()
  return Option.some({ start, end })
}

/** A media type safe to name in `Content-Type` (else `application/octet-stream`). */
const contentType = (mime: string) =>
  /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i.test(mime) ? mime.toLowerCase() : "application/octet-stream"

/** `attachment` with the file name (ASCII fallback and UTF-8) for documents; `inline` for the rest. */
const disposition = (kind: string, mime: string, filename: string | null) => {
  const inlineTypes = MessageContent.MEDIA_TYPES[kind as keyof typeof MessageContent.MEDIA_TYPES]
  if (kind !== "document" && inlineTypes !== null && inlineTypes?.includes(mime.toLowerCase())) return "inline"
  if (filename === null) return "attachment"
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_")
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`
}

export class MediaFiles extends Effect.Service<MediaFiles>()("@switchboard/service-api/MediaFiles", {
  effect: Effect.gen(function*() {
    const repo = yield* MediaRepo.MediaRepo
    const store = yield* MediaStore.MediaStore
    const transactions = yield* Transactions.Transactions
    const idempotency = yield* Idempotency
    const retentionDays = yield* MediaRepo.mediaRetentionDays

    const load = (workspaceId: string, id: string) =>
      Effect.flatMap(repo.find(workspaceId, id), (found) =>
        Option.match(found, {
          onNone: () =>
            Effect.fail(new Errors.NotFound({ message: `No media ${id}`, details: { resource: "media", id } })),
          onSome: Effect.succeed
        }))

    const get = Effect.fn("MediaFiles.get")(function*(workspaceId: string, id: string) {
      return yield* load(workspaceId, id)
    })

    const content = Effect.fn("MediaFiles.content")(function*(
      workspaceId: string,
      id: string,
      headers: { readonly range?: string | undefined; readonly "if-none-match"?: string | undefined }
    ) {
      const row = yield* load(workspaceId, id)
      if (row.status !== "ready" || row.size_bytes === null || row.sha256 === null) {
        return yield* new Errors.Conflict({
          message: `The media is ${row.status}`,
          details: { reason: `media_${row.status}` }
        })
      }
      const size = row.size_bytes
      const etag = `"${row.sha256}"`
      const common = {
        "etag": etag,
        "accept-ranges": "bytes",
        "content-disposition": disposition(row.kind, row.mime_type, row.filename),
        "cache-control": "private, max-age=3600",
        "x-content-type-options": "nosniff"
      }
      const ifNoneMatch = headers["if-none-match"]
      if (ifNoneMatch !== undefined && ifNoneMatch.split(",").some((t) => t.trim() === etag || t.trim() === "*")) {
        return HttpServerResponse.empty({ status: 304, headers: { etag } })
      }
      const range = size === 0 ? Option.none() : parseRange(headers.range, size)
      if (range === "unsatisfiable") {
        return yield* new Errors.RangeNotSatisfiable({
          message: "The range starts past the end of the file",
          details: { size_bytes: size }
        })
      }
      const { end, start } = Option.getOrElse(range, () => ({ start: 0, end: size - 1 }))
      const length = size === 0 ? 0 : end - start + 1
      return HttpServerResponse.stream(size === 0 ? store.read(id, 0, -1) : store.read(id, start, end), {
        status: Option.isSome(range) ? 206 : 200,
        contentType: contentType(row.mime_type),
        contentLength: length,
        headers: Option.isSome(range) ? { ...common, "content-range": `bytes ${start}-${end}/${size}` } : common
      })
    })

    /**
     * `POST /v1/media`: the body streamed into the store under a `pending` row, the kind's limit
     * enforced while it streams and its type checked from the first bytes; `ready` once every
     * byte is in. A refused, failed or interrupted upload removes the row and its bytes.
     */
    /**
     * Streams `body` into the store as a new media: its type checked from the first bytes, the
     * kind's limit enforced while it streams, `ready` once every byte is in (`complete` runs in
     * that transaction). Anything refused, failed or interrupted removes the row and its bytes.
     */
    const ingest = <E>(
      workspaceId: string,
      input: {
        readonly declared: string
        readonly kind: MessageContent.MediaKind | undefined
        readonly filename: string | undefined
        readonly announced: number | undefined
      },
      body: Stream.Stream<Uint8Array, E>,
      complete: (media: Media.Media) => Effect.Effect<void, Errors.IdempotencyConflict> = () => Effect.void
    ) =>
      Effect.scoped(Effect.gen(function*() {
        const { announced, declared } = input
        // an aborted upload, or one cut off by `HTTP_REQUEST_TIMEOUT`
        const bytes = Stream.mapError(body, () => incomplete())
        const [head, rest] = yield* Stream.peel(bytes, headSink)
        if (head.byteLength === 0) return yield* emptyFile()
        const type = undeclared(declared) ? (MediaSniff.sniff(head)[0] ?? declared) : declared
        const kind = input.kind ?? MediaSniff.kindOfType(type)
        if (undeclared(type) && kind !== "document") return yield* typeRefused(kind, type)
        if (!MediaSniff.acceptsBytes(kind, type, head)) return yield* typeRefused(kind, type)
        const limit = MessageContent.MEDIA_LIMIT_BYTES[kind]
        const id = yield* Ids.newId("med")
        const nowMs = yield* Clock.currentTimeMillis
        const now = Schemas.toTimestamp(nowMs)
        yield* repo.createUpload({
          id,
          workspaceId,
          kind,
          mimeType: undeclared(type) ? "application/octet-stream" : type,
          filename: input.filename ?? null,
          now,
          expiresAt: Schemas.toTimestamp(nowMs + retentionDays * 24 * 3600 * 1000)
        })
        const stored = yield* store.write(id, Stream.concat(Stream.make(head), rest), limit).pipe(
          Effect.catchTag("MediaTooLarge", (error) => Effect.fail(tooLarge(error.limitBytes))),
          Effect.onExit((exit) => exit._tag === "Success" ? Effect.void : Effect.ignore(repo.remove(id)))
        )
        if (announced !== undefined && stored.sizeBytes !== announced) {
          yield* Effect.ignore(repo.remove(id))
          return yield* new Errors.ValidationError({
            message: "The body's length is not its Content-Length",
            details: { reason: "body_incomplete", issues: [{ path: ["content-length"], message: "Mismatch" }] }
          })
        }
        return yield* transactions.run(Effect.gen(function*() {
          yield* repo.settle({ id, status: "ready", ...stored, failure: null, now })
          const media = Option.getOrThrow(yield* repo.find(workspaceId, id))
          yield* complete(media)
          return media
        })).pipe(Effect.onError(() => Effect.ignore(repo.remove(id))))
      }))

    /**
     * `POST /v1/media`: `ingest` of the request body under its `Idempotency-Key`. A body announced
     * over the limit is refused before a byte is read; a refusal closes the connection after the
     * answer (the rest of the body is not wanted).
     */
    const upload = Effect.fn("MediaFiles.upload")(function*<E>(
      workspaceId: string,
      input: UploadRequest,
      body: Stream.Stream<Uint8Array, E>
    ) {
      const declared = MediaSniff.essence(input.contentType ?? "")
      const announced = input.contentLength === undefined ? undefined : Number(input.contentLength)
      // the limit known before a byte is read: the kind named, or the one the declared type implies
      const limitBefore = MessageContent
        .MEDIA_LIMIT_BYTES[input.kind ?? (undeclared(declared) ? "document" : MediaSniff.kindOfType(declared))]
      if (announced !== undefined && announced > limitBefore) return yield* tooLarge(limitBefore)
      if (announced === 0) return yield* emptyFile()
      return yield* idempotency.run(
        {
          workspaceId,
          key: input.idempotencyKey,
          body: {
            route: "media.upload",
            content_type: declared,
            content_length: input.contentLength ?? null,
            filename: input.filename ?? null,
            kind: input.kind ?? null
          },
          response: Media.Media
        },
        (complete) =>
          ingest(workspaceId, { declared, kind: input.kind, filename: input.filename, announced }, body, complete)
      )
    }, Effect.tapError(() => setHeader("connection", "close")))

    return { get, content, upload, ingest } as const
  }),
  dependencies: [
    MediaRepo.MediaRepo.Default,
    MediaStore.MediaStore.Default,
    Transactions.Transactions.Default,
    Idempotency.Default
  ]
}) {}
