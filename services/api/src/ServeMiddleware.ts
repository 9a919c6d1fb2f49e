/**
 * `serveMiddleware` (outermost, around everything): the request id (`X-Request-Id`, kept when the
 * client's is safe, on every response and log line), the access log (`LoggedUrl`: what the
 * contract does not name masked) with the route template (`http.route`),
 * request metrics (`HttpMetrics`), the global prefix (`BASE_PATH`), targets the router must not
 * see (`RequestPath`, `ClientErrors`), and the request's span when tracing is on (`HttpTracing`).
 */
import { HttpApp, HttpMiddleware, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Errors } from "@switchboard/domain"
import { Effect, FiberRef, LogLevel } from "effect"
import { randomUUID } from "node:crypto"
import * as ClientErrors from "./ClientErrors.js"
import { envelopeResponse } from "./EnvelopeResponse.js"
import * as HttpMetrics from "./HttpMetrics.js"
import * as HttpTracing from "./HttpTracing.js"
import * as LoggedUrl from "./LoggedUrl.js"
import * as RequestPath from "./RequestPath.js"

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/

/** The probes an orchestrator polls every few seconds (docs/CONFIGURATION.md `LOG_REQUESTS`). */
const PROBES: ReadonlySet<string> = new Set(["/health", "/ready"])

/**
 * A probe's access-log line: DEBUG when it answers 2xx (a poll every few seconds would otherwise
 * be most of the log), INFO as any request's when it does not (a readiness that turned 503 is news).
 * The access logger logs at the fiber's current log level, which the answered request sets here.
 */
const quietWhenHealthy = (path: string) => (answer: HttpApp.Default): HttpApp.Default =>
  PROBES.has(path.split("?")[0]!)
    ? Effect.tap(
      answer,
      (response) => response.status < 300 ? FiberRef.set(FiberRef.currentLogLevel, LogLevel.Debug) : Effect.void
    )
    : answer

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
          Errors.NotFound,
          new Errors.NotFound({
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
            Errors.NotFound,
            new Errors.NotFound({
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
      const inner = quietWhenHealthy(path)(routed)
      const logged = options.logRequests
        ? Effect.provideService(
          HttpMiddleware.logger(Effect.provideService(inner, HttpServerRequest.HttpServerRequest, request)),
          HttpServerRequest.HttpServerRequest,
          request.modify({ url: LoggedUrl.masked(request.url, options.basePath) })
        )
        : routed
      return yield* Effect.annotateLogs(HttpTracing.traced(logged, requestId, path), {
        request_id: requestId,
        "http.route": HttpMetrics.routeOf(path)
      })
    })
