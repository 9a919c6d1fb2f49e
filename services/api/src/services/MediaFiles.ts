/**
 * Stored media as the API serves them (README "Media"): metadata, and the bytes streamed from
 * `MediaStore` with `ETag`, `Range` (one range) and `Content-Disposition`. Workspace-scoped: a
 * media of another workspace is 404, like one that does not exist.
 */
import { HttpServerResponse } from "@effect/platform"
import { MediaRepo, MediaStore, toMedia } from "@switchboard/db"
import { Conflict, MEDIA_TYPES, NotFound, RangeNotSatisfiable } from "@switchboard/domain"
import { Effect, Option } from "effect"

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
  const inlineTypes = MEDIA_TYPES[kind as keyof typeof MEDIA_TYPES]
  if (kind !== "document" && inlineTypes !== null && inlineTypes?.includes(mime.toLowerCase())) return "inline"
  if (filename === null) return "attachment"
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_")
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`
}

export class MediaFiles extends Effect.Service<MediaFiles>()("@switchboard/service-api/MediaFiles", {
  effect: Effect.gen(function*() {
    const repo = yield* MediaRepo
    const store = yield* MediaStore

    const load = (workspaceId: string, id: string) =>
      Effect.flatMap(repo.find(workspaceId, id), (found) =>
        Option.match(found, {
          onNone: () => Effect.fail(new NotFound({ message: `No media ${id}`, details: { resource: "media", id } })),
          onSome: Effect.succeed
        }))

    const get = Effect.fn("MediaFiles.get")(function*(workspaceId: string, id: string) {
      return toMedia(yield* load(workspaceId, id))
    })

    const content = Effect.fn("MediaFiles.content")(function*(
      workspaceId: string,
      id: string,
      headers: { readonly range?: string | undefined; readonly "if-none-match"?: string | undefined }
    ) {
      const row = yield* load(workspaceId, id)
      if (row.status !== "ready" || row.size_bytes === null || row.sha256 === null) {
        return yield* new Conflict({
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
        return yield* new RangeNotSatisfiable({
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

    return { get, content } as const
  }),
  dependencies: [MediaRepo.Default, MediaStore.Default]
}) {}
