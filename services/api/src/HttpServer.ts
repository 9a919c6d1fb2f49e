/**
 * The HTTP node as layers: the contract's handlers, the error mapping, docs, and the listener.
 * `layer` needs infrastructure (SqlClient, Redis, Sharding) and its configuration (HttpConfig,
 * IdentityConfig, Mailer) provided from outside, so the api
 * node, the standalone process and the tests compose the same thing.
 */
import { HttpApiBuilder, HttpApiSwagger, HttpMiddleware, HttpServer, OpenApi } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Api } from "@switchboard/api"
import { SessionsRepo, UsersRepo } from "@switchboard/db"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AuthenticationLive } from "./AuthenticationLive.js"
import { ApiKeysHandlers } from "./handlers/ApiKeysHandlers.js"
import { AuthHandlers, SessionHandlers } from "./handlers/AuthHandlers.js"
import { HealthHandlers } from "./handlers/HealthHandlers.js"
import { ChannelsHandlers, MessagesHandlers, SandboxHandlers } from "./handlers/MessagingHandlers.js"
import { PlanHandlers } from "./handlers/PlanHandlers.js"
import { QrPairingHandlers } from "./handlers/QrPairingHandlers.js"
import { WebhooksHandlers } from "./handlers/WebhooksHandlers.js"
import { HttpConfig } from "./HttpConfig.js"
import { errorMapping, serveMiddleware } from "./HttpMiddlewares.js"
import { IpRateLimitLive } from "./IpRateLimitLive.js"
import { Readiness } from "./Readiness.js"
import { Accounts } from "./services/Accounts.js"
import { ApiKeys } from "./services/ApiKeys.js"
import { Channels } from "./services/Channels.js"
import { Credentials } from "./services/Credentials.js"
import { Entitlements } from "./services/Entitlements.js"
import { Messages } from "./services/Messages.js"
import { QrPairing } from "./services/QrPairing.js"
import { RateLimits } from "./services/RateLimits.js"
import { Sandbox } from "./services/Sandbox.js"
import { UsageReport } from "./services/UsageReport.js"
import { Webhooks } from "./services/Webhooks.js"
import { ShutdownSignal } from "./ShutdownSignal.js"

const ApiLive = Layer.unwrapEffect(
  Effect.map(
    HttpConfig,
    ({ basePath }) => HttpApiBuilder.api(basePath === "" ? Api : Api.annotate(OpenApi.Servers, [{ url: basePath }]))
  )
).pipe(
  Layer.provide([
    HealthHandlers,
    AuthHandlers,
    SessionHandlers,
    ApiKeysHandlers,
    PlanHandlers,
    MessagesHandlers,
    ChannelsHandlers,
    QrPairingHandlers,
    SandboxHandlers,
    WebhooksHandlers
  ]),
  Layer.provide([AuthenticationLive, IpRateLimitLive]),
  Layer.provide(
    Layer.mergeAll(
      Readiness.Default,
      Accounts.Default,
      ApiKeys.Default,
      Entitlements.Default,
      UsageReport.Default,
      RateLimits.Default,
      Messages.Default,
      Channels.Default,
      QrPairing.Default,
      Sandbox.Default,
      Webhooks.Default,
      Credentials.Default,
      SessionsRepo.Default,
      UsersRepo.Default
    )
  )
)

const DocsLive = Layer.mergeAll(
  HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" }),
  HttpApiSwagger.layer({ path: "/docs" })
)

/**
 * The app served on whatever `HttpServer` is provided. No per-request tracing span: nothing
 * exports traces yet, and the span costs 15-20% CPU per request (HTTP.md §8).
 */
export const layer = Layer.unwrapEffect(
  Effect.map(HttpConfig, (config) =>
    HttpApiBuilder.serve(serveMiddleware(config)).pipe(
      HttpMiddleware.withTracerDisabledWhen(() => true),
      Layer.provide(DocsLive),
      Layer.provide(errorMapping),
      Layer.provide(ApiLive),
      Layer.provide(ShutdownSignal.Default)
    ))
)

/** The Node listener on `HTTP_HOST:HTTP_PORT`. */
export const listenerLayer = Layer.unwrapEffect(
  Effect.map(
    HttpConfig,
    ({ host, port }) => NodeHttpServer.layer(createServer, { port, host }).pipe(Layer.tap(() => Effect.void))
  )
)

export const serverLayer = layer.pipe(
  HttpServer.withLogAddress,
  Layer.provide(listenerLayer)
)
