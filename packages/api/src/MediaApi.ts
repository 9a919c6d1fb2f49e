/** Stored media (docs/API.md "Media"): metadata and bytes, workspace-scoped. */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Characters, Errors, Ids, Media, MessageContent } from "@switchboard/domain"
import { Schema } from "effect"
import * as IdempotencyKey from "./IdempotencyKey.js"
import { Authentication, rateLimited, requireScopes } from "./Security.js"

const MediaPath = Schema.Struct({ mediaId: Ids.IdRef("med") })

/** The file's bytes, as stored (its own `Content-Type`). */
export const MediaBytes = Schema.Uint8ArrayFromSelf.pipe(
  HttpApiSchema.withEncoding({ kind: "Uint8Array", contentType: "application/octet-stream" })
)

const mib = (bytes: number) => bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`

/** The upload's body as OpenAPI shows it: raw bytes under each media type the kinds take. */
const uploadContent = {
  ...Object.fromEntries(
    [
      ...new Set(Object.values(MessageContent.MEDIA_TYPES).flatMap((types) => types ?? [])),
      "application/octet-stream",
      "*/*"
    ].map(
      (type) => [type, { schema: { type: "string", format: "binary" } }]
    )
  ),
  "multipart/form-data": {
    schema: {
      type: "object",
      required: ["file"],
      additionalProperties: false,
      properties: {
        file: {
          type: "string",
          format: "binary",
          description: "The file, with its own Content-Type and file name (the form's one part)"
        }
      }
    }
  }
}

const limits = MessageContent.MediaKind.literals.map((kind) =>
  `${kind} ${mib(MessageContent.MEDIA_LIMIT_BYTES[kind])} (${
    MessageContent.MEDIA_TYPES[kind]?.join(", ") ?? "any type"
  })`
).join("; ")

export class MediaApi extends HttpApiGroup.make("media")
  .add(
    HttpApiEndpoint.post("upload", "/v1/media")
      .setUrlParams(Schema.Struct({
        filename: Schema.optional(
          Schema.String.pipe(
            Characters.minCharacters(1),
            Characters.maxCharacters(255)
          )
        ).annotations({ description: "The file's name (shown to the recipient of a document)" }),
        kind: Schema.optional(MessageContent.MediaKind).annotations({
          description:
            "What the file will be sent as (its size limit and the types it takes); by default the kind that takes the `Content-Type` (`image`, `video`, `audio`), otherwise `document`. Use `sticker` for a WebP sticker."
        })
      }))
      .setHeaders(Schema.Struct({
        "content-type": Schema.optional(Schema.String),
        "content-length": Schema.optional(Schema.String),
        "content-encoding": Schema.optional(Schema.String),
        "idempotency-key": IdempotencyKey.header
      }))
      .addSuccess(Media.Media, { status: 201 })
      .addError(Errors.ValidationError)
      .addError(Errors.PayloadTooLarge)
      .addError(Errors.UnsupportedMediaType)
      .addError(Errors.IdempotencyConflict)
      .annotate(OpenApi.Override, {
        requestBody: {
          required: true,
          description:
            "The file's bytes, as they are (not JSON), with its media type as `Content-Type`; or a `multipart/form-data` form whose one part, `file`, carries the file with its own type and name",
          content: uploadContent
        }
      })
      .annotate(
        OpenApi.Description,
        `Uploads a file to send (docs/API.md "Media"): the request body is the file's raw bytes and \`Content-Type\` its media type (the one route whose body is not JSON), or a \`multipart/form-data\` form with one part named \`file\` (\`curl -F file=@menu.png\`; its own type and file name are used, the type as the form parser reads it: type/subtype only unless the client quoted the whole type, as curl does; another part is 422). A media type is \`type/subtype\` with parameters kept (\`audio/ogg; codecs=opus\`), read in any case and strictly as RFC 9110 writes it; one that is not (\`*/*\`, \`image/\`, a control character, a parameter that is not \`name=value\` or is named twice) is 422 \`media_type_invalid\`, never stored with its odd parts dropped. A \`Content-Encoding\` is 415 \`UNSUPPORTED_MEDIA_TYPE\`. The body is streamed to storage, never held whole. Limits (WhatsApp's) and the types each kind takes: ${limits}. A body over the kind's limit is 413 \`PAYLOAD_TOO_LARGE\` with \`details.limit_bytes\` as soon as the limit is crossed (at once when \`Content-Length\` announces it); a type the kind does not take, or bytes that are not the declared type (checked from the file's first bytes, not only from \`Content-Type\`; a document whose bytes carry another family's signature, such as a PNG declared \`application/json\`, too), is 422 \`VALIDATION_ERROR\` with \`details.reason = media_type_unsupported\`, \`details.expected_kind\`/\`expected_types\` and \`details.sniffed_kind\`/\`sniffed_type\`; an empty body is 422 \`media_empty\`. A refused body is read and dropped (at most 10 s, 16 MiB) before the connection closes, so a client still writing reads the answer. Without a \`Content-Type\` (or with \`application/octet-stream\`) the type is read from the bytes. Nothing of a refused or interrupted upload is kept. Answers the media, \`status: ready\`, with \`size_bytes\` and \`sha256\`; send it with \`{"image": {"media_id": "med_..."}}\` (or the kind it was uploaded as) until \`expires_at\` (\`MEDIA_RETENTION_DAYS\`). \`Idempotency-Key\` (<= 255 characters, kept 24 h) is bound to \`Content-Type\`, \`Content-Length\`, \`filename\` and \`kind\`: a retry answers the first upload with \`Idempotent-Replay: true\` without storing the bytes again.`
      )
      .pipe(requireScopes("messages.send"), rateLimited("media_upload"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/media/:mediaId")
      .setPath(MediaPath)
      .addSuccess(Media.Media)
      .addError(Errors.NotFound)
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
      .addError(Errors.NotFound)
      .addError(Errors.Conflict)
      .addError(Errors.RangeNotSatisfiable)
      .annotate(
        OpenApi.Description,
        "The file's bytes, streamed, with its `Content-Type` (parameters kept: `audio/ogg; codecs=opus`), `Content-Length`, `ETag` (the SHA-256, quoted; `If-None-Match` with it, strong or weak, answers 304), `Accept-Ranges: bytes` and `Content-Disposition` (`attachment` with the file name for documents, `inline` for an image, video, audio or sticker). `Range: bytes=start-end` (the unit in any case) (one range; `start-` and `-suffix` too) answers 206 with `Content-Range`; a range starting past the end is 416 `RANGE_NOT_SATISFIABLE`; several ranges get the whole file. A media that is not `ready` is 409 `CONFLICT` with `details.reason` `media_pending`, `media_failed` or `media_expired`. Another workspace's media is 404."
      )
      .pipe(requireScopes("messages.read"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Media")
{}
