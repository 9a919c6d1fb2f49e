/**
 * Stored media as the API serves them (docs/API.md "Media"): metadata, and the bytes streamed from
 * `MediaStore` with `ETag`, `Range` (one range) and `Content-Disposition`. Workspace-scoped: a
 * media of another workspace is 404, like one that does not exist.
 */
import { HttpServerResponse } from "@effect/platform"
import { MediaRepo, MediaStore, RetentionSettings, Transactions } from "@switchboard/db"
import { Errors, Ids, Media, MediaSniff, MediaType, MessageContent, Schemas } from "@switchboard/domain"
import { Chunk, Clock, Effect, Option, Stream } from "effect"
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

/**
 * The leading bytes of a stream (at least `SNIFF_BYTES` unless it is shorter) and the rest of it,
 * pulled by hand: `Stream.peel` hands a failure of the stream after its head on as a defect (a
 * `ChannelException`), and a URL whose body was cut short answered 500 instead of 422.
 */
const splitHead = <E>(bytes: Stream.Stream<Uint8Array, E>) =>
  Effect.gen(function*() {
    const pull = yield* Stream.toPull(bytes)
    const pieces: Array<Uint8Array> = []
    let length = 0
    while (length < MediaSniff.SNIFF_BYTES) {
      const next = yield* Effect.either(pull)
      if (next._tag === "Left") {
        if (Option.isSome(next.left)) return yield* Effect.fail(next.left.value)
        return [new Uint8Array(Buffer.concat(pieces)), Stream.empty] as const
      }
      for (const piece of next.right) {
        pieces.push(piece)
        length += piece.byteLength
      }
    }
    const rest: Stream.Stream<Uint8Array, E> = Stream.repeatEffectChunkOption(pull)
    return [new Uint8Array(Buffer.concat(pieces)), rest] as const
  })

const tooLarge = (limit: number) =>
  new Errors.PayloadTooLarge({ message: `The file is larger than ${limit} bytes`, details: { limit_bytes: limit } })

const incomplete = () =>
  new Errors.ValidationError({
    message: "The upload ended before the whole body arrived",
    details: { reason: "body_incomplete", issues: [{ path: ["body"], message: "Incomplete" }] }
  })

const article = (kind: string) => /^[aeiou]/.test(kind) ? "An" : "A"

/**
 * A file `MediaSniff.checkFile` refused, as the 422 every door answers (`path`: where the client
 * named the type or gave the bytes). Names what was expected and what the bytes are (both from
 * our own tables), never the type the client declared.
 */
export const fileRefused = (
  refusal: MediaSniff.FileRefusal,
  paths: { readonly type: ReadonlyArray<string>; readonly bytes: ReadonlyArray<string> }
) => {
  switch (refusal._tag) {
    case "empty":
      return new Errors.ValidationError({
        message: "The file is empty",
        details: { reason: "media_empty", issues: [{ path: [...paths.bytes], message: "Expected the file's bytes" }] }
      })
    case "type_invalid":
      return new Errors.ValidationError({
        message: MediaType.INVALID.message,
        details: { reason: "media_type_invalid", issues: [{ path: [...paths.type], message: MediaType.INVALID.issue }] }
      })
    case "type_unsupported": {
      const { expected, kind, sniffed } = refusal
      const read = sniffed === null ? "of no type a media kind takes" : `${sniffed}`
      return new Errors.ValidationError({
        message: expected === null
          ? `The file's bytes are ${read}, not the declared type: declare ${
            sniffed ?? "its type"
          }, or leave Content-Type out to have it read from the bytes`
          : `${article(kind)} ${kind} takes ${
            expected.join(", ")
          }, and the bytes must be of the declared type (these are ${read})`,
        details: {
          reason: "media_type_unsupported",
          expected_kind: kind,
          expected_types: expected,
          sniffed_kind: sniffed === null ? null : MediaSniff.kindOfType(sniffed),
          sniffed_type: sniffed,
          issues: [{ path: [...paths.type], message: "Not taken, or not the bytes' type" }]
        }
      })
    }
  }
}

/**
 * `voice: true` on an audio whose type is not one WhatsApp plays as a voice note
 * (`MediaType.isVoiceNoteType`): the 422 of every door that takes `voice` (a send, a sandbox
 * inbound message), at `[audio, voice]`. Never names the file's type.
 */
export const voiceNoteRefused = () =>
  new Errors.ValidationError({
    message:
      `A voice note is an Ogg Opus file (${MediaType.VOICE_NOTE_TYPE}), the only type WhatsApp plays as one: send this audio without voice, or convert it to Ogg Opus`,
    details: {
      reason: "voice_note_type_unsupported",
      expected_types: [MediaType.VOICE_NOTE_TYPE],
      issues: [{ path: ["audio", "voice"], message: "Only Ogg Opus audio can be a voice note" }]
    }
  })

/** `voice: true` on a file of `mimeType`: passes for a voice note's type, else `voiceNoteRefused`. */
export const checkVoiceNote = (mimeType: string): Effect.Effect<void, Errors.ValidationError> =>
  MediaType.isVoiceNoteType(mimeType) ? Effect.void : Effect.fail(voiceNoteRefused())

/** Where an upload names its type and carries its bytes. */
const UPLOAD_PATHS = { type: ["content-type"], bytes: ["body"] } as const
/** Where a multipart upload names its type and carries its bytes: its `file` part. */
const PART_PATHS = { type: ["file", "content-type"], bytes: ["file"] } as const

/** What a multipart form may add to its file (boundaries, part headers) before its length alone is too large. */
const MULTIPART_FRAMING_BYTES = 64 * 1024

/** The `file` part of a `multipart/form-data` upload: its own headers and its bytes. */
export interface MultipartFile<E> {
  readonly part: { readonly contentType: string | undefined; readonly filename: string | undefined }
  readonly bytes: Stream.Stream<Uint8Array, E>
}

/** A `Range` header against a file of `size` bytes: the one range asked, `None` for the whole file. */
export const parseRange = (
  header: string | undefined,
  size: number
): Option.Option<{ readonly start: number; readonly end: number }> | "unsatisfiable" => {
  if (header === undefined) return Option.none()
  // the unit is case-insensitive (RFC 9110 14.1): `Bytes=0-99` is the same range
  const match = /^bytes[ \t]*=[ \t]*(\d*)[ \t]*-[ \t]*(\d*)$/i.exec(header.trim())
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

/**
 * Whether an `If-None-Match` list names `etag`: the weak comparison RFC 9110 13.1.2 asks for
 * (`W/"..."` matches its strong tag), or `*`.
 */
export const matchesEtag = (header: string, etag: string): boolean =>
  header.split(",").some((tag) => {
    const t = tag.trim()
    return t === "*" || t.replace(/^W\//i, "") === etag
  })

/** A stored type as `Content-Type` (canonical, parameters kept; else `application/octet-stream`). */
const contentType = (mime: string) => Option.getOrElse(MediaType.normalize(mime), () => "application/octet-stream")

/**
 * `inline` for a file a browser may show in place (an image, a video, an audio of a type its kind
 * takes); `attachment` with the file name (ASCII fallback and UTF-8) for documents and the rest.
 */
const disposition = (kind: MessageContent.MediaKind, mime: string, filename: string | null) => {
  const inlineTypes = MessageContent.MEDIA_TYPES[kind]
  if (kind !== "document" && inlineTypes !== null && inlineTypes.includes(MediaType.essenceOf(mime))) return "inline"
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
    const retentionDays = (yield* RetentionSettings.RetentionSettings).mediaDays

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
      if (ifNoneMatch !== undefined && matchesEtag(ifNoneMatch, etag)) {
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
     * Streams `body` into the store as a new media: checked by `MediaSniff.checkFile` from its
     * first bytes (the one check of every door), the kind's limit enforced while it streams,
     * `ready` once every byte is in (`complete` runs in that transaction). Anything refused,
     * failed or interrupted removes the row and its bytes. `declared` is the type as the client
     * or the remote server named it (any text).
     */
    const ingest = <E>(
      workspaceId: string,
      input: {
        readonly declared: string | undefined
        readonly kind: MessageContent.MediaKind | undefined
        readonly filename: string | undefined
        readonly announced: number | undefined
      },
      body: Stream.Stream<Uint8Array, E>,
      complete: (media: Media.Media) => Effect.Effect<void, Errors.IdempotencyConflict> = () => Effect.void,
      paths: { readonly type: ReadonlyArray<string>; readonly bytes: ReadonlyArray<string> } = UPLOAD_PATHS
    ) =>
      Effect.scoped(Effect.gen(function*() {
        const { announced } = input
        // an aborted upload, or one cut off by `HTTP_REQUEST_TIMEOUT`
        // a refusal the body itself carries (a multipart form with a part after its file) stays itself
        const bytes = Stream.mapError(body, (e) => e instanceof Errors.ValidationError ? e : incomplete())
        const [head, rest] = yield* splitHead(bytes)
        const verdict = MediaSniff.checkFile({ kind: input.kind, declared: input.declared, head })
        if (verdict._tag === "refused") return yield* fileRefused(verdict.refusal, paths)
        const { kind, mimeType } = verdict.file
        const limit = MessageContent.MEDIA_LIMIT_BYTES[kind]
        const id = yield* Ids.newId("med")
        const nowMs = yield* Clock.currentTimeMillis
        const now = Schemas.toTimestamp(nowMs)
        yield* repo.createUpload({
          id,
          workspaceId,
          kind,
          mimeType,
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
     * `POST /v1/media`: `ingest` of the request body (or of its multipart `file` part) under its
     * `Idempotency-Key`. A body announced over the limit, a type that is not `type/subtype` and a
     * `Content-Encoding` are refused before a byte is read; a refusal closes the connection after
     * the answer (the rest of the body is read and dropped, `LingeringClose`).
     */
    const upload = Effect.fn("MediaFiles.upload")(function*<E>(
      workspaceId: string,
      input: UploadRequest,
      body: Stream.Stream<Uint8Array, E> | MultipartFile<E>
    ) {
      const declaredText = "part" in body ? body.part.contentType : input.contentType
      const parsed = declaredText === undefined || declaredText.trim() === ""
        ? Option.none()
        : MediaType.parseStrict(declaredText)
      if (declaredText !== undefined && declaredText.trim() !== "" && Option.isNone(parsed)) {
        return yield* fileRefused({ _tag: "type_invalid" }, "part" in body ? PART_PATHS : UPLOAD_PATHS)
      }
      const declared = Option.match(parsed, { onNone: () => "", onSome: (t) => t.essence })
      const announced = "part" in body || input.contentLength === undefined ? undefined : Number(input.contentLength)
      // the limit known before a byte is read: the kind named, or the one the declared type implies
      const limitBefore = MessageContent
        .MEDIA_LIMIT_BYTES[
          input.kind ?? (MediaSniff.undeclared(declared) ? "document" : MediaSniff.kindOfType(declared))
        ]
      if (announced !== undefined && announced > limitBefore) return yield* tooLarge(limitBefore)
      // a form announced larger than its file could be plus its framing
      const formLength = "part" in body && input.contentLength !== undefined ? Number(input.contentLength) : 0
      if (formLength > limitBefore + MULTIPART_FRAMING_BYTES) return yield* tooLarge(limitBefore)
      if (announced === 0) return yield* fileRefused({ _tag: "empty" }, UPLOAD_PATHS)
      const filename = input.filename ?? ("part" in body ? body.part.filename : undefined)
      return yield* idempotency.run(
        {
          workspaceId,
          key: input.idempotencyKey,
          body: {
            route: "media.upload",
            content_type: `${"part" in body ? "multipart " : ""}${
              Option.match(parsed, { onNone: () => "", onSome: MediaType.format })
            }`,
            content_length: input.contentLength ?? null,
            filename: filename ?? null,
            kind: input.kind ?? null
          },
          response: Media.Media
        },
        (complete) =>
          ingest(
            workspaceId,
            { declared: declaredText, kind: input.kind, filename, announced },
            "part" in body ? body.bytes : body,
            complete,
            "part" in body ? PART_PATHS : UPLOAD_PATHS
          )
      )
    }, Effect.tapError(() => setHeader("connection", "close")))

    /**
     * A stored media checked as `kind` by the same `checkFile` as every door, on its stored first
     * bytes: whatever it was uploaded as (a `document` of any bytes), a send or a sandbox message
     * as an image, a video, an audio or a sticker carries bytes of that kind. Answers the type to
     * send it with.
     */
    const checkStored = Effect.fn("MediaFiles.checkStored")(function*(
      row: Media.Media,
      kind: MessageContent.MediaKind,
      paths: { readonly type: ReadonlyArray<string>; readonly bytes: ReadonlyArray<string> }
    ) {
      const pieces = yield* Stream.runCollect(store.read(row.id, 0, MediaSniff.SNIFF_BYTES - 1))
      const head = new Uint8Array(Buffer.concat(Chunk.toReadonlyArray(pieces)))
      // the type as stored (canonical; an inbound file's as its provider announced it)
      const verdict = MediaSniff.checkFile({ kind, declared: row.mime_type, head, lenient: true })
      if (verdict._tag === "refused") return yield* fileRefused(verdict.refusal, paths)
      return verdict.file.mimeType
    })

    /**
     * A file fetched from a URL for one send that was then refused (a voice note of another type,
     * the plan's contacts limit, the QR safety cap, a lost claim, an interrupted request): its row
     * and its bytes go, so a refused send leaves nothing behind (docs/API.md "Media"). Kept when a
     * message refers to it after all. A failure to remove is logged, never the client's answer:
     * the refusal stands, and the file then goes with retention (`MEDIA_RETENTION_DAYS`).
     */
    const discardUnsent = Effect.fn("MediaFiles.discardUnsent")(function*(id: string) {
      // the row first: bytes are never dropped under a message that refers to them
      if (yield* repo.removeUnsent(id)) yield* store.purge(id)
    }, (effect, id) =>
      Effect.catchAllCause(
        effect,
        (cause) =>
          Effect.logWarning("a refused send's fetched file could not be removed", cause).pipe(
            Effect.annotateLogs({ media_id: id })
          )
      ))

    return { get, content, upload, ingest, checkStored, discardUnsent } as const
  }),
  dependencies: [
    MediaRepo.MediaRepo.Default,
    MediaStore.MediaStore.Default,
    Transactions.Transactions.Default,
    Idempotency.Default
  ]
}) {}
