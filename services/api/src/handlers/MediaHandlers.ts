import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Api, Security } from "@switchboard/api"
import { Effect } from "effect"
import { unavailableAsDefect } from "../DatabaseFailures.js"
import { MediaFiles } from "../services/MediaFiles.js"

export const MediaHandlers = HttpApiBuilder.group(Api.Api, "media", (handlers) =>
  Effect.gen(function*() {
    const media = unavailableAsDefect(yield* MediaFiles)
    return handlers
      .handle("upload", ({ headers, urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* Security.CurrentPrincipal
          const incoming = NodeHttpServerRequest.toIncomingMessage(yield* HttpServerRequest.HttpServerRequest)
          // the platform's own stream destroys the socket when it is left early (a refusal), and
          // the client would never read the answer: the rest of a refused body is read and dropped
          // instead (bounded by `HTTP_REQUEST_TIMEOUT`), the connection closed after the answer
          const body = NodeStream.fromReadable<unknown, Uint8Array>(() => incoming, (e) => e, { closeOnDone: false })
          return yield* media.upload(principal.workspaceId, {
            contentType: headers["content-type"],
            contentLength: headers["content-length"],
            filename: urlParams.filename,
            kind: urlParams.kind,
            idempotencyKey: headers["idempotency-key"]
          }, body).pipe(
            Effect.ensuring(Effect.sync(() => {
              if (!incoming.readableEnded) incoming.resume()
            }))
          )
        }))
      .handle("get", ({ path }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) => media.get(p.workspaceId, path.mediaId)))
      .handle("content", ({ headers, path }) =>
        Effect.flatMap(Security.CurrentPrincipal, (p) =>
          media.content(p.workspaceId, path.mediaId, headers)))
  }))
