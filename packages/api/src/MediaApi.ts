/** Stored media (README "Media"): metadata and bytes, workspace-scoped. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Conflict, Id, Media, NotFound, RangeNotSatisfiable } from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, requireScopes } from "./Security.js"

const MediaPath = Schema.Struct({ mediaId: Id("med") })

/** The file's bytes, as stored (its own `Content-Type`). */
export const MediaBytes = Schema.Uint8ArrayFromSelf.pipe(
  HttpApiSchema.withEncoding({ kind: "Uint8Array", contentType: "application/octet-stream" })
)

export class MediaApi extends HttpApiGroup.make("media")
  .add(
    HttpApiEndpoint.get("get", "/v1/media/:mediaId")
      .setPath(MediaPath)
      .addSuccess(Media)
      .addError(NotFound)
      .annotate(
        OpenApi.Description,
        "A stored file's metadata: `status` `pending` while its bytes are fetched from the provider, `ready` once stored (`size_bytes`, `sha256`), `failed` with `failure_reason`, `expired` after `expires_at` (`MEDIA_RETENTION_DAYS`, default 30: the bytes are purged). Another workspace's media is 404."
      )
      .pipe(requireScopes("messages.read"))
  )
  .add(
    HttpApiEndpoint.get("content", "/v1/media/:mediaId/content")
      .setPath(MediaPath)
      .setHeaders(Schema.Struct({
        range: Schema.optional(Schema.String),
        "if-none-match": Schema.optional(Schema.String)
      }))
      .addSuccess(MediaBytes)
      .addSuccess(MediaBytes.pipe(HttpApiSchema.withEncoding({ kind: "Uint8Array" })), { status: 206 })
      .addError(NotFound)
      .addError(Conflict)
      .addError(RangeNotSatisfiable)
      .annotate(
        OpenApi.Description,
        "The file's bytes, streamed, with its `Content-Type`, `Content-Length`, `ETag` (the SHA-256, quoted; `If-None-Match` with it answers 304), `Accept-Ranges: bytes` and `Content-Disposition` (`attachment` with the file name for documents, `inline` otherwise). `Range: bytes=start-end` (one range; `start-` and `-suffix` too) answers 206 with `Content-Range`; a range starting past the end is 416 `RANGE_NOT_SATISFIABLE`; several ranges get the whole file. A media that is not `ready` is 409 `CONFLICT` with `details.reason` `media_pending`, `media_failed` or `media_expired`. Another workspace's media is 404."
      )
      .pipe(requireScopes("messages.read"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Media")
{}
