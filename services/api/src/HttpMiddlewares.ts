/**
 * The request pipeline around the contract:
 * - `errorMapping` (API-level, inside the builder's error encoder): decode failures, malformed
 *   JSON, oversize bodies, unknown routes and defects become error envelopes; a refusal that says
 *   when to retry (`details.retry_after_seconds`) gets its `Retry-After` header here;
 * - `serveMiddleware` (outermost): request id, log annotation, access log, request metrics
 *   (`HttpMetrics`), global prefix, the request's span when tracing is on (`HttpTracing`).
 */
import {
  HttpApiBuilder,
  HttpApp,
  HttpMiddleware,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { Api, Issues } from "@switchboard/api"
import {
  InternalError,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  ServiceUnavailable,
  ValidationError
} from "@switchboard/domain"
import { Cause, Chunk, Effect, Layer, Option, Predicate, Schema } from "effect"
import { randomUUID } from "node:crypto"
import type { IncomingMessage } from "node:http"
import * as ClientErrors from "./ClientErrors.js"
import { HttpConfig } from "./HttpConfig.js"
import * as HttpMetrics from "./HttpMetrics.js"
import * as HttpTracing from "./HttpTracing.js"
import * as JsonGuard from "./JsonGuard.js"
import * as JsonMembers from "./JsonMembers.js"
import * as LingeringClose from "./LingeringClose.js"
import * as RequestPath from "./RequestPath.js"
import { setHeader } from "./ResponseHeaders.js"
import { routeTable } from "./RouteTable.js"

interface EnvelopeClass {
  readonly status: number
}

/** Writes an envelope directly (for answers produced outside the builder's encoder). */
export const envelopeResponse = <E extends { readonly message: string }, I>(
  cls: Schema.Schema<E, I, never> & EnvelopeClass,
  error: E,
  headers?: Record<string, string>
) =>
  Effect.orDie(HttpServerResponse.json(Schema.encodeSync(cls)(error), { status: cls.status, headers: headers ?? {} }))

/**
 * 413 with `Connection: close`; the close lingers (`LingeringClose`) so that a client still
 * writing its body reads the answer instead of a reset.
 */
const payloadTooLarge = (limit: number, transfer: "content-length" | "chunked") =>
  Effect.zipRight(
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.zipRight(
        Effect.sync(() => LingeringClose.lingerAfterAnswer(NodeHttpServerRequest.toIncomingMessage(request))),
        Effect.logWarning("request body over the limit").pipe(
          Effect.annotateLogs({ limit_bytes: limit, transfer })
        )
      )),
    envelopeResponse(
      PayloadTooLarge,
      new PayloadTooLarge({ message: `Request body exceeds ${limit} bytes`, details: { limit_bytes: limit } }),
      { connection: "close" }
    )
  )

const routeNotFound = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const pathname = new URL(request.url, "http://localhost").pathname
  const overlong = routeTable.overlongParams(request.method, pathname)
  if (overlong.length > 0) {
    return envelopeResponse(
      ValidationError,
      new ValidationError({
        message: "Request validation failed",
        details: { issues: overlong.map((name) => ({ path: [name], message: "Expected a shorter value" })) }
      })
    )
  }
  const allowed = routeTable.allowedMethods(pathname)
  if (allowed.length > 0) {
    return envelopeResponse(
      MethodNotAllowed,
      new MethodNotAllowed({ message: "This method is not allowed on this path", details: { allowed } }),
      { allow: allowed.join(", ") }
    )
  }
  return envelopeResponse(
    NotFound,
    new NotFound({ message: "No route has this method and path", details: { resource: "route" } })
  )
})

const validationError = (issues: ReadonlyArray<Issues.Issue>) =>
  Effect.fail(new ValidationError({ message: "Request validation failed", details: { issues } }))

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

const bodyLimit = (request: HttpServerRequest.HttpServerRequest, defaultLimit: number) => {
  if (request.method !== "POST") return defaultLimit
  const path = new URL(request.url, "http://localhost").pathname
  if (path.endsWith("/v1/contacts/imports")) return Math.max(defaultLimit, IMPORT_BODY_BYTES)
  if (/\/v1\/sandbox\/sessions\/[^/]+\/inbound$/.test(path)) return Math.max(defaultLimit, SANDBOX_INBOUND_BODY_BYTES)
  return defaultLimit
}

/**
 * Guards every request before routing (docs/API.md, OpenAPI description): a body over
 * `MAX_BODY_BYTES` is 413 whether it is announced (`Content-Length`) or chunked; a body that is
 * not `application/json` is 422 (form-encoded bodies would otherwise be decoded as members named
 * after the submitted text); a body that is not UTF-8, JSON nested deeper than `MAX_JSON_DEPTH`,
 * holding U+0000 or a lone surrogate, or naming a member twice is 422.
 * The body read here is handed on, so routes decode it without reading the socket again.
 */
const guardRequest = (app: HttpApp.Default, defaultMaxBodyBytes: number) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const maxBodyBytes = bodyLimit(request, defaultMaxBodyBytes)
    const inQuery = queryIssues(request.url)
    if (inQuery) return validationError(inQuery)
    if (isUpload(request)) return app
    const contentLength = request.headers["content-length"]
    const chunked = request.headers["transfer-encoding"] !== undefined
    if (!chunked && (contentLength === undefined || contentLength === "0")) return app
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
          new ValidationError({
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

/** `Retry-After` of a refusal whose `details.retry_after_seconds` says when: whole seconds, at least 1. */
const retryAfterSeconds = (error: unknown): string | undefined => {
  if (!Predicate.hasProperty(error, "details") || !Predicate.isRecord(error.details)) return undefined
  const seconds = error.details["retry_after_seconds"]
  return typeof seconds === "number" && Number.isFinite(seconds) ? String(Math.max(1, Math.ceil(seconds))) : undefined
}

/**
 * What the mapping answers with, as the builder's middleware type declares it (the API-level
 * errors). The endpoints' own failures (`ServiceUnavailable`, `NotFound`, ...) pass through here
 * too, and the builder's encoder answers each with the status its class declares; the type cannot
 * say so, hence the one assertion below.
 */
type Mapped = HttpApp.Default<ValidationError | InternalError | PayloadTooLarge>

const mapErrors = (maxBodyBytes: number) =>
  HttpApiBuilder.middleware(Api, (app) =>
    Effect.catchAllCause(guardRequest(app, maxBodyBytes), (cause): Effect.Effect<
      HttpServerResponse.HttpServerResponse,
      unknown,
      HttpServerRequest.HttpServerRequest
    > => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) {
        const error = failure.value as unknown
        if (Predicate.isTagged(error, "HttpApiDecodeError")) {
          // only ids that name nothing: the resource's 404, as for a well-formed unknown id
          const unknownId = Issues.unknownIdRefusal((error as HttpApiDecodeError).issues)
          if (unknownId !== undefined) return Effect.fail(unknownId)
          const issues = Issues.fromFormatted((error as HttpApiDecodeError).issues)
          return Effect.fail(new ValidationError({ message: "Request validation failed", details: { issues } }))
        }
        if (Predicate.isTagged(error, "RouteNotFound")) return routeNotFound
        const retryAfter = retryAfterSeconds(error)
        if (retryAfter !== undefined) {
          return Effect.zipRight(setHeader("retry-after", retryAfter), Effect.failCause(cause))
        }
        return Effect.failCause(cause)
      }
      const defects = Chunk.toReadonlyArray(Cause.defects(cause))
      const requestError = defects.find((d) => HttpServerError.isServerError(d) && d._tag === "RequestError") as
        | HttpServerError.RequestError
        | undefined
      if (requestError) {
        if (String((requestError.cause as { message?: unknown } | undefined)?.message ?? "").includes("maxBytes")) {
          return payloadTooLarge(maxBodyBytes, "chunked")
        }
        return Effect.fail(
          new ValidationError({
            message: "Malformed request body",
            details: { issues: [{ path: ["body"], message: "Body is not valid JSON" }] }
          })
        )
      }
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
      if (defects.some(isTransientDatabaseFailure)) {
        return Effect.logError("database refused the statement for now (deadlock, conflict or cancel)", cause).pipe(
          Effect.zipRight(
            Effect.fail(
              new ServiceUnavailable({
                message: "The database could not complete this request now; nothing was changed. Retry."
              })
            )
          )
        )
      }
      if (defects.some(isConnectivityFailure)) {
        return Effect.logError("dependency unreachable", cause).pipe(
          Effect.zipRight(
            Effect.fail(
              new ServiceUnavailable({ message: "A dependency is unreachable; nothing was changed. Retry later." })
            )
          )
        )
      }
      return Effect.logError("unhandled defect", cause).pipe(
        Effect.zipRight(Effect.fail(new InternalError({ message: "Internal server error" })))
      )
    }) as Mapped)

export const errorMapping = Layer.unwrapEffect(Effect.map(HttpConfig, ({ maxBodyBytes }) => mapErrors(maxBodyBytes)))

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
      return yield* new ValidationError({
        message: "Malformed request body",
        details: { issues: [{ path: ["body"], message: "Body is not valid JSON" }] }
      })
    }
    return yield* Schema.decodeUnknown(schema)(json).pipe(
      Effect.mapError((error) =>
        new ValidationError({ message: "Request validation failed", details: { issues: Issues.fromParseError(error) } })
      )
    )
  })

const CONNECTIVITY_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "57P01",
  "57P03",
  "08006",
  "08001",
  "08003"
])

/**
 * A database that cannot be reached, as opposed to a bug. The one place that decides a 503 for
 * the database: repositories turn every `SqlError` into a defect at their boundary (db
 * `Rows.ts`), services and the authentication middleware let it through, and it ends here.
 * The client could not get a connection at all (the database refuses or is gone), lost one, or
 * the server said it is shutting down or unreachable.
 */
const isConnectivityFailure = (defect: unknown): boolean => {
  if (!Predicate.isTagged(defect, "SqlError")) return false
  const error = defect as { message?: string; cause?: { code?: string; message?: string } }
  const cause = error.cause
  return /^(Failed to acquire connection|Connection error)/.test(String(error.message ?? "")) ||
    (cause?.code !== undefined && CONNECTIVITY_CODES.has(cause.code)) ||
    /Connection terminated|connect ECONNREFUSED|timeout/i.test(String(cause?.message ?? ""))
}

/**
 * Statements Postgres refused for a passing reason: a deadlock (40P01), a serialization failure
 * (40001), a lock not available (55P03), a statement cancelled (57014). The transaction rolled
 * back, so the request changed nothing and a retry (with the same Idempotency-Key) is safe: 503,
 * not 500.
 */
const TRANSIENT_CODES = new Set(["40P01", "40001", "55P03", "57014"])

export const isTransientDatabaseFailure = (defect: unknown): boolean =>
  Predicate.isTagged(defect, "SqlError") &&
  TRANSIENT_CODES.has(String((defect as { cause?: { code?: unknown } }).cause?.code ?? ""))

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/

/**
 * The URL as the request log shows it: query values masked (`?q=*&limit=*`), since a contact
 * search or a filter can carry a phone number or an e-mail address.
 */
export const loggedUrl = (url: string): string => {
  const query = url.indexOf("?")
  if (query < 0) return url
  const names = url.slice(query + 1).split("&").filter((pair) => pair !== "").map((pair) => pair.split("=")[0])
  return `${url.slice(0, query)}?${names.map((name) => `${name}=*`).join("&")}`
}

/** Request id on every response and log line; strips the global prefix before routing. */
export const serveMiddleware =
  (options: { readonly basePath: string; readonly logRequests: boolean }) => (app: HttpApp.Default): HttpApp.Default =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const incoming = request.headers["x-request-id"]
      const requestId = incoming !== undefined && REQUEST_ID.test(incoming) ? incoming : randomUUID()
      yield* HttpApp.appendPreResponseHandler((_req, response) =>
        Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId))
      )
      let routed = app
      // the path the contract sees (metrics and spans name it by its route template)
      let path = request.url
      if (ClientErrors.lacksHost(NodeHttpServerRequest.toIncomingMessage(request))) {
        path = "/unmatched"
        routed = Effect.orDie(
          HttpServerResponse.json(ClientErrors.WITHOUT_HOST.body, {
            status: ClientErrors.WITHOUT_HOST.status,
            headers: { connection: "close" }
          })
        )
      } else if (!RequestPath.isRoutable(request.url)) {
        // before the global prefix and the router: the router would cut the path at `;` or `#`
        path = "/unmatched"
        routed = envelopeResponse(
          NotFound,
          new NotFound({
            message: "No route has this path: a path segment holds a character that must be percent-encoded",
            details: { resource: "route", reason: "path_character" }
          })
        )
      } else if (options.basePath !== "") {
        const url = request.url
        const prefixed = url === options.basePath || url.startsWith(`${options.basePath}/`) ||
          url.startsWith(`${options.basePath}?`)
        if (!prefixed) {
          path = "/unmatched"
          routed = envelopeResponse(
            NotFound,
            new NotFound({
              message: "No route has this path: it is outside the base path",
              details: { resource: "route" }
            })
          )
        } else {
          const rest = url.slice(options.basePath.length)
          path = rest === "" || rest.startsWith("?") ? `/${rest}` : rest
          routed = Effect.provideService(app, HttpServerRequest.HttpServerRequest, request.modify({ url: path }))
        }
      }
      routed = HttpMetrics.measure(path)(routed)
      // the logger reads the request it logs from the context: it sees the masked URL, the app the real one
      const inner = routed
      const logged = options.logRequests
        ? Effect.provideService(
          HttpMiddleware.logger(Effect.provideService(inner, HttpServerRequest.HttpServerRequest, request)),
          HttpServerRequest.HttpServerRequest,
          request.modify({ url: loggedUrl(request.url) })
        )
        : routed
      return yield* Effect.annotateLogs(HttpTracing.traced(logged, requestId, path), "request_id", requestId)
    })
