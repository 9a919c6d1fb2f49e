/**
 * Uploads a file to send (`POST /v1/media`, docs/API.md "Media"): the bytes go as the raw request
 * body, streamed (a `Blob` from `fs.openAsBlob(path)` or a `ReadableStream` is never read whole
 * into memory), with the file's media type as `Content-Type`. Resolves with the stored media
 * (`status: "ready"`, `id` to send with `{"image": {"media_id": ...}}`); rejects with a
 * `SwitchboardError` in the API's words (413 `PAYLOAD_TOO_LARGE` with `details.limit_bytes`, 422
 * `VALIDATION_ERROR` with `details.reason = media_type_unsupported`, ...). A `contentType` the API
 * would refuse as no media type (a CR/LF or other control character, a parameter that is not
 * `name=value`, `*\/*`) rejects before anything is sent, with the API's 422 `VALIDATION_ERROR`,
 * `details.reason = media_type_invalid` and `details.sent = false`, never `NETWORK_ERROR`.
 *
 * ```ts
 * import { openAsBlob } from "node:fs"
 * const media = await uploadMedia(
 *   { baseUrl: "https://api.example.com", apiKey: process.env.SWITCHBOARD_KEY },
 *   { file: await openAsBlob("menu.png"), contentType: "image/png", filename: "menu.png" }
 * )
 * ```
 */
import { Media, MediaType, type MessageContent } from "@switchboard/domain"
import { Option, Schema } from "effect"
import type { CreateClientOptions } from "./PromiseClient.js"
import { SwitchboardError } from "./PromiseClient.js"

export interface UploadMediaInput {
  /** the file: a `Blob` (`fs.openAsBlob(path)` in Node), a stream of bytes, or the bytes */
  readonly file: Blob | ReadableStream<Uint8Array> | Uint8Array
  /** the file's media type (`image/png`, `application/pdf`, ...); omitted: read from the bytes */
  readonly contentType?: string | undefined
  /** shown to the recipient of a document */
  readonly filename?: string | undefined
  /** what the file will be sent as (its limit and types), e.g. `sticker`; default from the type */
  readonly kind?: MessageContent.MediaKind | undefined
  /** a retry with the same key (and the same type, length, name and kind) answers the first upload */
  readonly idempotencyKey?: string | undefined
}

const decodeMedia = Schema.decodeUnknownSync(Media.Media)
const Envelope = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    details: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  })
})
const decodeEnvelope = Schema.decodeUnknownOption(Envelope)

/**
 * A type the API would refuse (422 `media_type_invalid`), refused before a byte is sent, in the
 * API's words and shape, plus `details.sent = false` (as every request the client refuses). Read
 * as the server reads a client's type (`MediaType.parseStrict`, spaces and tabs around it dropped):
 * a control character (a CR or LF, which no HTTP header can carry), a parameter that is not
 * `name=value`, a wildcard.
 */
const refuseInvalidType = (type: string): void => {
  const text = MediaType.trimClient(type)
  if (text === "" || Option.isSome(MediaType.parseStrict(text))) return
  throw new SwitchboardError("VALIDATION_ERROR", MediaType.INVALID.message, 422, {
    reason: "media_type_invalid",
    issues: [{ path: ["content-type"], message: MediaType.INVALID.issue }],
    sent: false
  })
}

export const uploadMedia = async (options: CreateClientOptions, input: UploadMediaInput): Promise<Media.Media> => {
  const base = options.baseUrl === undefined ? "" : String(options.baseUrl).replace(/\/$/, "")
  const query = new URLSearchParams()
  if (input.filename !== undefined) query.set("filename", input.filename)
  if (input.kind !== undefined) query.set("kind", input.kind)
  const headers: Record<string, string> = {}
  if (options.apiKey !== undefined) headers["authorization"] = `Bearer ${options.apiKey}`
  if (options.workspaceId !== undefined) headers["x-workspace-id"] = options.workspaceId
  const type = input.contentType ?? (input.file instanceof Blob && input.file.type !== "" ? input.file.type : undefined)
  if (type !== undefined) refuseInvalidType(type)
  headers["content-type"] = type ?? "application/octet-stream"
  if (input.idempotencyKey !== undefined) headers["idempotency-key"] = input.idempotencyKey
  const fetch = options.fetch ?? globalThis.fetch
  let response: Response
  try {
    response = await fetch(`${base}/v1/media${query.size > 0 ? `?${query}` : ""}`, {
      method: "POST",
      headers,
      body: input.file as NonNullable<RequestInit["body"]>,
      // a stream body is sent as it is read (Node's fetch requires saying so)
      ...(input.file instanceof ReadableStream ? { duplex: "half" } : {})
    } as RequestInit)
  } catch (error) {
    throw new SwitchboardError("NETWORK_ERROR", String(error), undefined, {})
  }
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new SwitchboardError("UNEXPECTED_RESPONSE", `Unexpected answer: HTTP ${response.status}`, response.status, {})
  }
  if (response.status === 201 || response.status === 200) {
    try {
      return decodeMedia(json)
    } catch {
      throw new SwitchboardError("INVALID_RESPONSE", `Unexpected answer: HTTP ${response.status}`, response.status, {})
    }
  }
  const envelope = decodeEnvelope(json)
  if (envelope._tag === "Some") {
    const { code, details, message } = envelope.value.error
    throw new SwitchboardError(code, message, response.status, details ?? {})
  }
  throw new SwitchboardError("UNEXPECTED_RESPONSE", `Unexpected answer: HTTP ${response.status}`, response.status, {})
}
