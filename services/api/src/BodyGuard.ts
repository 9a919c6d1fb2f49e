/**
 * The guards every request passes before routing, and the optional JSON body of a route that
 * takes one (docs/API.md, hostile input): body size (413, announced or chunked), content type,
 * UTF-8, JSON depth, U+0000 and lone surrogates (`JsonGuard`), duplicate members (`JsonMembers`),
 * U+0000 in the query, unknown and repeated query parameters (`QueryGuard`). What the guard read is handed on, so routes never read the socket twice.
 */
import { HttpApp, HttpServerError, HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Issues } from "@switchboard/api"
import { Errors } from "@switchboard/domain"
import { Effect, Schema } from "effect"
import type { IncomingMessage } from "node:http"
import { envelopeResponse } from "./EnvelopeResponse.js"
import * as JsonGuard from "./JsonGuard.js"
import * as JsonMembers from "./JsonMembers.js"
import * as LingeringClose from "./LingeringClose.js"
import * as QueryGuard from "./QueryGuard.js"
import { routeTable } from "./RouteTable.js"

/**
 * 413 with `Connection: close`; the close lingers (`LingeringClose`) so that a client still
 * writing its body reads the answer instead of a reset.
 */
export const payloadTooLarge = (limit: number, transfer: "content-length" | "chunked") =>
  Effect.zipRight(
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.zipRight(
        Effect.sync(() => LingeringClose.lingerAfterAnswer(NodeHttpServerRequest.toIncomingMessage(request))),
        Effect.logWarning("request body over the limit").pipe(
          Effect.annotateLogs({ limit_bytes: limit, transfer })
        )
      )),
    envelopeResponse(
      Errors.PayloadTooLarge,
      new Errors.PayloadTooLarge({ message: `Request body exceeds ${limit} bytes`, details: { limit_bytes: limit } }),
      { connection: "close" }
    )
  )

/**
 * A body sent with a `Content-Encoding` (gzip, br, ...) other than `identity`: no route takes one
 * (a JSON body would be read as its compressed bytes, a file stored compressed as if it were the
 * file), so every route answers the same 415 before reading it.
 */
export const encodedBody = (contentEncoding: string | undefined) =>
  contentEncoding !== undefined && contentEncoding.trim() !== "" && contentEncoding.trim().toLowerCase() !== "identity"

/**
 * 415 `UNSUPPORTED_MEDIA_TYPE` (`details.reason = content_encoding`) with `Connection: close`;
 * the unread body lingers (`LingeringClose`) so a client still writing it reads the answer.
 */
export const contentEncodingRefused = Effect.zipRight(
  Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request) => Effect.sync(() => LingeringClose.lingerAfterAnswer(NodeHttpServerRequest.toIncomingMessage(request)))
  ),
  envelopeResponse(
    Errors.UnsupportedMediaType,
    new Errors.UnsupportedMediaType({
      message: "Send the request body as it is, without Content-Encoding (no route takes a compressed body)",
      details: { reason: "content_encoding", issues: [{ path: ["content-encoding"], message: "Not taken" }] }
    }),
    { connection: "close" }
  )
)

const validationError = (issues: ReadonlyArray<Issues.Issue>) =>
  Effect.fail(new Errors.ValidationError({ message: "Request validation failed", details: { issues } }))

/**
 * What the platform decodes as JSON: `application/json`, with or without parameters. A body
 * without `Content-Type` is not JSON (docs/API.md): 422 like any other.
 */
const isJsonContentType = (header: string | undefined) =>
  header !== undefined && header.split(";")[0]!.trim().toLowerCase() === "application/json"

type BodyRead =
  | { readonly _tag: "Read"; readonly text: string }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "NotUtf8" }

/** Strict: invalid bytes throw; a byte order mark is kept (and refused as JSON, as before). */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/**
 * Reads the body up to `maxBytes`. Over it, the rest is read and discarded rather than the socket
 * destroyed (the platform's own limit resets the connection, and the client never sees the 413);
 * `HTTP_REQUEST_TIMEOUT` bounds a body that never ends.
 */
const readBody = (source: IncomingMessage, maxBytes: number) =>
  Effect.async<BodyRead, HttpServerError.RequestError>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    let done = false
    const finish = (result: Effect.Effect<BodyRead, HttpServerError.RequestError>) => {
      if (done) return
      done = true
      resume(result)
    }
    source.on("data", (chunk: Buffer) => {
      if (done) return
      bytes += chunk.length
      if (bytes > maxBytes) {
        chunks.length = 0
        finish(Effect.succeed({ _tag: "TooLarge" }))
      } else {
        chunks.push(chunk)
      }
    })
    source.once("end", () => {
      // bytes that are not UTF-8 would otherwise become U+FFFD in what is stored
      try {
        finish(Effect.succeed({ _tag: "Read", text: utf8.decode(Buffer.concat(chunks)) }))
      } catch {
        finish(Effect.succeed({ _tag: "NotUtf8" }))
      }
    })
    // an aborted upload, or one cut off by `HTTP_REQUEST_TIMEOUT` (answered by `ClientErrors`)
    source.once("error", () => finish(Effect.interrupt))
    source.once("close", () => finish(Effect.interrupt))
  })

/** U+0000 in a query parameter (name or value): refused like in a body. */
const queryIssues = (url: string): ReadonlyArray<Issues.Issue> | undefined => {
  const q = url.indexOf("?")
  if (q < 0 || !url.includes("%00", q)) return undefined
  const issues: Array<Issues.Issue> = []
  for (const [name, value] of new URLSearchParams(url.slice(q + 1))) {
    if (name.includes("\u0000")) issues.push({ path: [], message: "Must not contain the character U+0000" })
    else if (value.includes("\u0000")) issues.push({ path: [name], message: "Must not contain the character U+0000" })
  }
  return issues.length > 0 ? issues : undefined
}

/**
 * A contact import carries a file of up to 5 MiB in base64 (about 6.7 MiB): that one route takes
 * bodies up to `IMPORT_BODY_BYTES` (docs/API.md "Contact imports"); every other keeps `MAX_BODY_BYTES`.
 */
export const IMPORT_BODY_BYTES = 7 * 1024 * 1024

/**
 * A sandbox inbound message carries a file of up to 1 MiB in base64 (about 1.4 MiB): that route
 * takes bodies up to `SANDBOX_INBOUND_BODY_BYTES` (docs/API.md "Messages").
 */
export const SANDBOX_INBOUND_BODY_BYTES = 2 * 1024 * 1024

/**
 * `POST /v1/media` is the one route whose body is not JSON: the raw file, streamed by its handler
 * into storage under the media kind's own limit (docs/API.md "Media"), never read here.
 */
export const isUpload = (request: HttpServerRequest.HttpServerRequest) =>
  request.method === "POST" && new URL(request.url, "http://localhost").pathname === "/v1/media"

/** A path that exists, asked with a method it does not take: the router's 405, before any body check. */
const methodNotRouted = (request: HttpServerRequest.HttpServerRequest) => {
  const path = new URL(request.url, "http://localhost").pathname
  return routeTable.template(request.method, path) === undefined && routeTable.allowedMethods(path).length > 0
}

const bodyLimit = (request: HttpServerRequest.HttpServerRequest, defaultLimit: number) => {
  if (request.method !== "POST") return defaultLimit
  const path = new URL(request.url, "http://localhost").pathname
  if (path.endsWith("/v1/contacts/imports")) return Math.max(defaultLimit, IMPORT_BODY_BYTES)
  if (/\/v1\/sandbox\/sessions\/[^/]+\/inbound$/.test(path)) return Math.max(defaultLimit, SANDBOX_INBOUND_BODY_BYTES)
  return defaultLimit
}

/**
 * Guards every request before routing (docs/API.md, OpenAPI description): a body with a
 * `Content-Encoding` is 415 (`contentEncodingRefused`); a body over
 * `MAX_BODY_BYTES` is 413 whether it is announced (`Content-Length`) or chunked; a body that is
 * not `application/json` is 422 (form-encoded bodies would otherwise be decoded as members named
 * after the submitted text); a body that is not UTF-8, JSON nested deeper than `MAX_JSON_DEPTH`,
 * holding U+0000 or a lone surrogate, or naming a member twice is 422.
 * The body read here is handed on, so routes decode it without reading the socket again.
 */
export const guardRequest = (app: HttpApp.Default, defaultMaxBodyBytes: number) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const maxBodyBytes = bodyLimit(request, defaultMaxBodyBytes)
    const inQuery = queryIssues(request.url)
    if (inQuery) return validationError(inQuery)
    const declared = routeTable.queryNames(request.method, new URL(request.url, "http://localhost").pathname)
    const queryRefused = declared === undefined ? [] : QueryGuard.check(request.url, declared)
    if (queryRefused.length > 0) return validationError(queryRefused)
    // a method the path does not take is 405 whatever its body (`PUT /v1/media` with a file):
    // the router answers it, and Node drops the unread body
    if (methodNotRouted(request)) return app
    const contentLength = request.headers["content-length"]
    const chunked = request.headers["transfer-encoding"] !== undefined
    const hasBody = chunked || (contentLength !== undefined && contentLength !== "0")
    // the same 415 on every route, the upload's included, before a byte of the body is read
    if ((hasBody || isUpload(request)) && encodedBody(request.headers["content-encoding"])) {
      return contentEncodingRefused
    }
    if (isUpload(request)) return app
    if (!hasBody) return app
    if (Number(contentLength ?? 0) > maxBodyBytes) return payloadTooLarge(maxBodyBytes, "content-length")
    return Effect.flatMap(readBody(NodeHttpServerRequest.toIncomingMessage(request), maxBodyBytes), (body) => {
      if (body._tag === "TooLarge") return payloadTooLarge(maxBodyBytes, "chunked")
      if (body._tag === "NotUtf8") return validationError([{ path: ["body"], message: "Body is not valid UTF-8" }])
      // the source is consumed: whatever runs next reads this text
      const read: HttpServerRequest.HttpServerRequest = Object.create(request, {
        text: { value: Effect.succeed(body.text) }
      })
      if (body.text === "") return Effect.provideService(app, HttpServerRequest.HttpServerRequest, read)
      if (!isJsonContentType(request.headers["content-type"])) {
        // said in the user's words, with the header to send (curl's `-d` sends form encoding)
        return Effect.fail(
          new Errors.ValidationError({
            message: "Send the request body as JSON with the header Content-Type: application/json",
            details: {
              reason: "content_type",
              issues: [{ path: ["content-type"], message: "Must be application/json" }]
            }
          })
        )
      }
      const issues = JsonGuard.check(body.text) ?? JsonMembers.check(body.text)
      if (issues) return validationError(issues)
      return Effect.provideService(app, HttpServerRequest.HttpServerRequest, read)
    })
  })

/**
 * Decodes an OPTIONAL JSON body (for endpoints where no body is meaningful): empty -> `undefined`;
 * otherwise the same 422s as declared payloads.
 */
export const optionalJsonBody = <A, I>(schema: Schema.Schema<A, I, never>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const text = yield* Effect.orDie(request.text)
    if (text.trim() === "") return undefined
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return yield* new Errors.ValidationError({
        message: "Malformed request body",
        details: { issues: [{ path: ["body"], message: "Body is not valid JSON" }] }
      })
    }
    return yield* Schema.decodeUnknown(schema)(json).pipe(
      Effect.mapError((error) =>
        new Errors.ValidationError({
          message: "Request validation failed",
          details: { issues: Issues.fromParseError(error) }
        })
      )
    )
  })
