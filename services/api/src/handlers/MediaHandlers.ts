import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import * as LingeringClose from "../LingeringClose.js"
import * as MultipartUpload from "../MultipartUpload.js"
import { setHeader } from "../ResponseHeaders.js"
import { MediaFiles } from "../services/MediaFiles.js"

export const MediaHandlers = HttpApiBuilder.group(Api.Api, "media", (handlers) =>
  Effect.gen(function*() {
    const media = unavailableAsDefect(yield* MediaFiles)
    return handlers
      .handle("upload", ({ headers, urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* Security.CurrentPrincipal
          const incoming = NodeHttpServerRequest.toIncomingMessage(yield* HttpServerRequest.HttpServerRequest)
          // a refusal answers before the body is read: the rest of it is read and dropped after
          // the answer (`LingeringClose`, bounded), so a client still writing it (Node's `fetch`,
          // `http.request`) reads the answer instead of a reset
          const refused = Effect.zipRight(
            Effect.sync(() => LingeringClose.lingerAfterAnswer(incoming)),
            setHeader("connection", "close")
          )
          // a `Content-Encoding` never gets here: 415 before routing, as on every route
          // (`BodyGuard.contentEncodingRefused`; a compressed file would be stored as if it were the file)
          const request = {
            contentType: headers["content-type"],
            contentLength: headers["content-length"],
            filename: urlParams.filename,
            kind: urlParams.kind,
            idempotencyKey: headers["idempotency-key"]
          }
          if (MultipartUpload.isMultipart(headers["content-type"])) {
            return yield* Effect.acquireUseRelease(
              MultipartUpload.filePart(incoming),
              ({ file }) => media.upload(principal.workspaceId, { ...request, contentType: undefined }, file),
              ({ release }) => Effect.sync(release)
            ).pipe(Effect.tapError(() => refused))
          }
          // the platform's own stream destroys the socket when it is left early (a refusal)
          const body = NodeStream.fromReadable<unknown, Uint8Array>(() => incoming, (e) => e, { closeOnDone: false })
          return yield* media.upload(principal.workspaceId, request, body).pipe(Effect.tapError(() => refused))
        }))
      .handle("get", ({ path }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) => media.get(p.workspaceId, path.mediaId)))
      .handle("content", ({ headers, path }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) =>
          media.content(p.workspaceId, path.mediaId, headers)))
  }))
