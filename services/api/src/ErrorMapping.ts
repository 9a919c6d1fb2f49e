/**
 * `errorMapping` (API-level, inside the builder's error encoder): runs the body guards
 * (`BodyGuard`), then turns decode failures, malformed JSON, oversize bodies, unknown routes and
 * defects into error envelopes (a passing database failure into 503, `DatabaseFailures`); a
 * refusal that says when to retry (`details.retry_after_seconds`) gets its `Retry-After` header
 * here.
 */
import { HttpApiBuilder, HttpApp, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { Api, Issues } from "@switchboard/api"
import { Errors } from "@switchboard/domain"
import { Cause, Chunk, Effect, Layer, Option, Predicate } from "effect"
import { guardRequest, payloadTooLarge } from "./BodyGuard.js"
import { isRefusedForNow, unavailableIn } from "./DatabaseFailures.js"
import { envelopeResponse } from "./EnvelopeResponse.js"
import { HttpConfig } from "./HttpConfig.js"
import { setHeader } from "./ResponseHeaders.js"
import { routeTable } from "./RouteTable.js"

const routeNotFound = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const pathname = new URL(request.url, "http://localhost").pathname
  const overlong = routeTable.overlongParams(request.method, pathname)
  if (overlong.length > 0) {
    return envelopeResponse(
      Errors.ValidationError,
      new Errors.ValidationError({
        message: "Request validation failed",
        details: { issues: overlong.map((name) => ({ path: [name], message: "Expected a shorter value" })) }
      })
    )
  }
  const allowed = routeTable.allowedMethods(pathname)
  // the method is one the path takes, yet the router found no route: a member of the path could not
  // be read (`/v1/messages/msg_%ff`, not UTF-8 once decoded). Nothing is there; a 405 with this very
  // method in `Allow` would say the opposite.
  if (allowed.includes(request.method)) {
    return envelopeResponse(
      Errors.NotFound,
      new Errors.NotFound({
        message: "Nothing is at this path: a member of it is not a valid value",
        details: { resource: "route" }
      })
    )
  }
  if (allowed.length > 0) {
    return envelopeResponse(
      Errors.MethodNotAllowed,
      new Errors.MethodNotAllowed({ message: "This method is not allowed on this path", details: { allowed } }),
      { allow: allowed.join(", ") }
    )
  }
  return envelopeResponse(
    Errors.NotFound,
    new Errors.NotFound({ message: "No route has this method and path", details: { resource: "route" } })
  )
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
type Mapped = HttpApp.Default<Errors.ValidationError | Errors.InternalError | Errors.PayloadTooLarge>

const mapErrors = (maxBodyBytes: number) =>
  HttpApiBuilder.middleware(
    Api.Api,
    (app) =>
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
            return Effect.fail(
              new Errors.ValidationError({ message: "Request validation failed", details: { issues } })
            )
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
            new Errors.ValidationError({
              message: "Malformed request body",
              details: { issues: [{ path: ["body"], message: "Body is not valid JSON" }] }
            })
          )
        }
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
        const unavailable = defects.map(unavailableIn).find((u) => u !== undefined)
        if (unavailable !== undefined && isRefusedForNow(unavailable)) {
          return Effect.logError("database refused the statement for now (deadlock, conflict or cancel)", cause).pipe(
            Effect.zipRight(
              Effect.fail(
                new Errors.ServiceUnavailable({
                  message: "The database could not complete this request now; nothing was changed. Retry."
                })
              )
            )
          )
        }
        if (unavailable !== undefined) {
          return Effect.logError("dependency unreachable", cause).pipe(
            Effect.zipRight(
              Effect.fail(
                new Errors.ServiceUnavailable({
                  message: "A dependency is unreachable; nothing was changed. Retry later."
                })
              )
            )
          )
        }
        return Effect.logError("unhandled defect", cause).pipe(
          Effect.zipRight(Effect.fail(new Errors.InternalError({ message: "Internal server error" })))
        )
      }) as Mapped
  )

export const errorMapping = Layer.unwrapEffect(Effect.map(HttpConfig, ({ maxBodyBytes }) => mapErrors(maxBodyBytes)))
