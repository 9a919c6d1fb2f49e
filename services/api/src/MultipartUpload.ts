/**
 * The `file` part of a `multipart/form-data` upload (`curl -F file=@menu.png`, docs/API.md "Media"),
 * streamed by `@fastify/busboy` as it arrives: the part's own `Content-Type` and file name, and its
 * bytes as a stream that `MediaFiles` writes chunk by chunk, so a 100 MiB document is never held
 * whole. The form takes one part, named `file`; any other part, a form without it or framing
 * busboy cannot read is 422.
 */
import { NodeStream } from "@effect/platform-node"
import { Busboy, type BusboyHeaders } from "@fastify/busboy"
import { Errors } from "@switchboard/domain"
import { Effect } from "effect"
import type { IncomingMessage } from "node:http"
import type { MultipartFile } from "./services/MediaFiles.js"

const refused = (message: string, reason: string) =>
  new Errors.ValidationError({
    message,
    details: { reason, issues: [{ path: ["body"], message }] }
  })

/** Whether a `Content-Type` is a multipart form (any case, parameters after it). */
export const isMultipart = (contentType: string | undefined) =>
  contentType !== undefined && /^\s*multipart\/form-data\s*(;|$)/i.test(contentType)

/**
 * Reads the form up to its `file` part and hands that part on as a stream; `release` (run once
 * the upload ended, whatever its outcome) detaches the parser so the rest of the body can be read
 * and dropped.
 */
export const filePart = (incoming: IncomingMessage) =>
  Effect.async<
    { readonly file: MultipartFile<unknown>; readonly release: () => void },
    Errors.ValidationError
  >((resume) => {
    let done = false
    const finish = (
      result: Effect.Effect<
        { readonly file: MultipartFile<unknown>; readonly release: () => void },
        Errors.ValidationError
      >
    ) => {
      if (done) return
      done = true
      resume(result)
    }
    let parser: ReturnType<typeof Busboy>
    try {
      parser = Busboy({
        headers: incoming.headers as BusboyHeaders,
        // the part named `file` is the file, whether or not it names a file name
        isPartAFile: (name) => name === "file",
        limits: { files: 1, parts: 1, fields: 0, headerPairs: 20, fieldNameSize: 100 }
      })
    } catch {
      return finish(Effect.fail(refused("The multipart form has no boundary", "multipart_invalid")))
    }
    const release = () => {
      incoming.unpipe(parser)
      parser.removeAllListeners("file")
      if (!incoming.readableEnded) incoming.resume()
    }
    const other = () => {
      release()
      finish(Effect.fail(refused("The form takes one part, named file (the file itself)", "multipart_part_unknown")))
    }
    parser.on("file", (_name, stream, filename, _encoding, mimeType) => {
      finish(Effect.succeed({
        file: {
          part: { contentType: mimeType, filename: filename === "" ? undefined : filename },
          bytes: NodeStream.fromReadable<unknown, Uint8Array>(() => stream, (e) => e, { closeOnDone: false })
        },
        release: () => {
          release()
          stream.resume()
        }
      }))
    })
    parser.on("field", other)
    parser.on("fieldsLimit", other)
    parser.on("partsLimit", other)
    parser.on("error", () => {
      release()
      finish(Effect.fail(refused("The multipart form could not be read", "multipart_invalid")))
    })
    parser.on("finish", () => finish(Effect.fail(refused("The form has no part named file", "multipart_no_file"))))
    incoming.pipe(parser)
  })
