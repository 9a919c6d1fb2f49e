/**
 * One server span per request when tracing is on (infra `Tracing`), named after the route
 * (`POST /v1/messages`), child of an incoming `traceparent` (W3C) or B3 header when there is one.
 * A 5xx answer makes it an error span. It records the method, the route, the path, the request id
 * and the status: never a header (the credential travels in `Authorization`), never the query
 * string (search terms, phone numbers).
 * Probes, metrics and event streams are not traced: they would drown the traces that matter (a
 * stream's span would last minutes).
 * With tracing off nothing here runs: the platform's own request span stays disabled
 * (`HttpServer.layer`), and this middleware passes the request through.
 */
import { HttpApp, HttpServerError, HttpServerRequest, HttpTraceContext } from "@effect/platform"
import { Clock, Context, Data, Effect, Exit, FiberRef, Option } from "effect"
import { routeTable } from "./RouteTable.js"

/** Paths and route templates that get no span. */
export const UNTRACED: ReadonlySet<string> = new Set([
  "/health",
  "/ready",
  "/metrics",
  "/v1/channels/:channelId/qr/stream"
])

const untraced = (request: HttpServerRequest.HttpServerRequest, path: string, template: string | undefined) =>
  UNTRACED.has(path) || (template !== undefined && UNTRACED.has(template)) ||
  (request.headers["accept"] ?? "").includes("text/event-stream")

/**
 * `requestId`: the one the response carries (`x-request-id`); `url`: the request's, without the
 * global prefix. An untraced request runs with the tracer off, so what it calls (the readiness
 * probe's cluster ping) starts no trace either.
 */
export const traced = (app: HttpApp.Default, requestId: string, url: string): HttpApp.Default =>
  Effect.withFiberRuntime((fiber) => {
    if (!fiber.getFiberRef(FiberRef.currentTracerEnabled)) return app
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    const q = url.indexOf("?")
    const path = q < 0 ? url : url.slice(0, q)
    const template = routeTable.template(request.method, path)
    if (untraced(request, path, template)) return Effect.withTracerEnabled(app, false)
    const parent = HttpTraceContext.fromHeaders(request.headers)
    return Effect.useSpan(
      template === undefined ? request.method : `${request.method} ${template}`,
      {
        kind: "server",
        captureStackTrace: false,
        ...(Option.isSome(parent) ? { parent: parent.value } : {}),
        attributes: {
          "http.request.method": request.method,
          "url.path": path,
          ...(template === undefined ? {} : { "http.route": template }),
          "request_id": requestId
        }
      },
      (span) =>
        Effect.onExit(Effect.withParentSpan(app, span), (exit) => {
          const status = Exit.isSuccess(exit) ? exit.value.status : HttpServerError.exitResponse(exit).status
          span.attribute("http.response.status_code", status)
          if (status < 500 || Exit.isFailure(exit)) return Effect.void
          // a 5xx answered (the error mapping turns defects into responses): the span is an error
          span.attribute("error.type", String(status))
          return Effect.map(
            Clock.currentTimeNanos,
            (now) => span.end(now, Exit.fail(new ServerErrorStatus({ message: `HTTP ${status}` })))
          )
        })
    )
  })

/** What a request's span ends with when it was answered with a 5xx. */
class ServerErrorStatus extends Data.TaggedError("ServerErrorStatus")<{ readonly message: string }> {}
