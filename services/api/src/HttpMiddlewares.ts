/**
 * The request pipeline around the contract:
 * - `errorMapping` (API-level, inside the builder's error encoder): decode failures, malformed
 *   JSON, oversize bodies, unknown routes and defects become SPEC envelopes; a refusal that says
 *   when to retry (`details.retry_after_seconds`) gets its `Retry-After` header here;
 * - `serveMiddleware` (outermost): request id, log annotation, access log, global prefix.
 */
import {
  HttpApiBuilder,
  HttpApp,
  HttpIncomingMessage,
  HttpMiddleware,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { Api } from "@switchboard/api"
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
import { HttpConfig } from "./HttpConfig.js"
import * as Issues from "./Issues.js"
import { setHeader } from "./ResponseHeaders.js"
import { routeTable } from "./RouteTable.js"

interface EnvelopeClass {
  readonly status: number
}

/** Writes an envelope directly (for answers produced outside the builder's encoder). */
export const envelopeResponse = <E extends { readonly message: string }>(
  cls: Schema.Schema<E, any, never> & EnvelopeClass,
  error: E,
  headers?: Record<string, string>
) =>
  Effect.orDie(HttpServerResponse.json(Schema.encodeSync(cls)(error), { status: cls.status, headers: headers ?? {} }))

const payloadTooLarge = (limit: number) =>
  envelopeResponse(
    PayloadTooLarge,
    new PayloadTooLarge({ message: `Request body exceeds ${limit} bytes`, details: { limit_bytes: limit } }),
    { connection: "close" }
  )

const routeNotFound = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const pathname = new URL(request.url, "http://localhost").pathname
  const allowed = routeTable.allowedMethods(pathname)
  if (allowed.length > 0) {
    return envelopeResponse(
      MethodNotAllowed,
      new MethodNotAllowed({ message: `Method ${request.method} is not allowed here`, details: { allowed } }),
      { allow: allowed.join(", ") }
    )
  }
  return envelopeResponse(
    NotFound,
    new NotFound({ message: `No route for ${request.method} ${pathname}`, details: { resource: "route" } })
  )
})

/** Limits the body: `Content-Length` first (a clean 413), the stream limit for chunked bodies. */
const limitBody = (app: HttpApp.Default<any, any>, maxBodyBytes: number) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const length = Number(request.headers["content-length"] ?? 0)
    return length > maxBodyBytes
      ? payloadTooLarge(maxBodyBytes)
      : HttpIncomingMessage.withMaxBodySize(app, Option.some(maxBodyBytes))
  })

/** `Retry-After` of a refusal whose `details.retry_after_seconds` says when: whole seconds, at least 1. */
const retryAfterSeconds = (error: unknown): string | undefined => {
  if (!Predicate.hasProperty(error, "details") || !Predicate.isRecord(error.details)) return undefined
  const seconds = error.details["retry_after_seconds"]
  return typeof seconds === "number" && Number.isFinite(seconds) ? String(Math.max(1, Math.ceil(seconds))) : undefined
}

const mapErrors = (maxBodyBytes: number) =>
  HttpApiBuilder.middleware(Api, (app) =>
    Effect.catchAllCause(limitBody(app, maxBodyBytes), (cause) => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) {
        const error = failure.value as unknown
        if (Predicate.isTagged(error, "HttpApiDecodeError")) {
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
          return payloadTooLarge(maxBodyBytes)
        }
        return Effect.fail(
          new ValidationError({
            message: "Malformed request body",
            details: { issues: [{ path: ["body"], message: "Body is not valid JSON" }] }
          })
        )
      }
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
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
    }))

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

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/

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
      if (options.basePath !== "") {
        const url = request.url
        const prefixed = url === options.basePath || url.startsWith(`${options.basePath}/`) ||
          url.startsWith(`${options.basePath}?`)
        if (!prefixed) {
          routed = envelopeResponse(
            NotFound,
            new NotFound({
              message: `No route for ${request.method} ${url.split("?")[0]}`,
              details: { resource: "route" }
            })
          )
        } else {
          const rest = url.slice(options.basePath.length)
          routed = Effect.provideService(
            app,
            HttpServerRequest.HttpServerRequest,
            request.modify({ url: rest === "" || rest.startsWith("?") ? `/${rest}` : rest })
          )
        }
      }
      const logged = options.logRequests ? HttpMiddleware.logger(routed) : routed
      return yield* Effect.annotateLogs(logged, "request_id", requestId)
    })
