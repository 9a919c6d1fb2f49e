/**
 * The `file` part of a `multipart/form-data` upload (`curl -F file=@menu.png`, docs/API.md "Media"),
 * streamed by `@fastify/busboy` as it arrives: the part's own `Content-Type` and file name, and its
 * bytes as a stream that `MediaFiles` writes chunk by chunk, so a 100 MiB document is never held
 * whole. The form takes one part, named `file`; any other part (before the file or after it: the
 * file's bytes end only with the form), a form without it or framing busboy cannot read is 422.
 */
import { NodeStream } from "@effect/platform-node"
import { Busboy, type BusboyHeaders } from "@fastify/busboy"
import { Characters, Errors } from "@switchboard/domain"
import { Effect, Stream } from "effect"
import type { IncomingMessage } from "node:http"
import type { MultipartFile } from "./services/MediaFiles.js"

const refused = (message: string, reason: string) =>
  new Errors.ValidationError({
    message,
    details: { reason, issues: [{ path: ["body"], message }] }
  })

/** The longest file name a part may carry, as `?filename=` (characters: code points). */
export const MAX_FILENAME_CHARACTERS = 255

/**
 * Why a part's file name is refused (422 at `["file", "filename"]`, never echoing it), as
 * `?filename=` would be: more than 255 characters, or U+0000. None when it is fine or absent.
 */
export const partFilenameRefusal = (filename: string): Errors.ValidationError | undefined => {
  const message = filename.includes("\u0000")
    ? "Must not contain the character U+0000"
    : Characters.hasAtMostCharacters(filename, MAX_FILENAME_CHARACTERS)
    ? undefined
    : `Expected at most ${MAX_FILENAME_CHARACTERS} characters`
  return message === undefined ? undefined : new Errors.ValidationError({
    message: "Request validation failed",
    details: { issues: [{ path: ["file", "filename"], message }] }
  })
}

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
    const partUnknown = () => refused("The form takes one part, named file (the file itself)", "multipart_part_unknown")
    // once the file is handed on, what follows it is only noted: its bytes end with the form, and
    // fail then if the form held another part or broke (`formEnd`)
    let handedOn = false
    let after: Errors.ValidationError | undefined
    let formEnded: () => void = () => {}
    const formEnd = new Promise<void>((resolve) => {
      formEnded = resolve
    })
    const other = () => {
      if (handedOn) {
        after ??= partUnknown()
        return
      }
      release()
      finish(Effect.fail(partUnknown()))
    }
    parser.on("file", (_name, stream, filename, _encoding, mimeType) => {
      // the part's file name is held to the rules of `?filename=` (Postgres cannot store U+0000)
      const nameRefusal = partFilenameRefusal(filename)
      if (nameRefusal !== undefined) {
        stream.resume()
        release()
        return finish(Effect.fail(nameRefusal))
      }
      handedOn = true
      const rest = Stream.drain(Stream.fromEffect(Effect.flatMap(
        Effect.promise(() => formEnd),
        () => after === undefined ? Effect.void : Effect.fail(after)
      )))
      finish(Effect.succeed({
        file: {
          part: { contentType: mimeType, filename: filename === "" ? undefined : filename },
          bytes: Stream.concat(
            NodeStream.fromReadable<unknown, Uint8Array>(() => stream, (e) => e, { closeOnDone: false }),
            rest
          )
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
    // a second part named file
    parser.on("filesLimit", other)
    parser.on("error", () => {
      if (handedOn) {
        after ??= refused("The multipart form could not be read", "multipart_invalid")
        return formEnded()
      }
      release()
      finish(Effect.fail(refused("The multipart form could not be read", "multipart_invalid")))
    })
    parser.on("finish", () => {
      formEnded()
      finish(Effect.fail(refused("The form has no part named file", "multipart_no_file")))
    })
    incoming.pipe(parser)
  })
